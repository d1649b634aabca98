import { toWire, type AgentMessage } from './agent-message.js';
import type { AgentMessageFormat } from './parse-agent-message.js';
import { yamlModule } from './yaml-module.js';

export interface RenderAgentMessageOptions {
  /** Default `yaml`, the seed's form (§7). */
  format?: AgentMessageFormat;
}

const POINTER_KEYS = new Set(['type', 'ref', 'digest', 'span']);

/**
 * The canonical text of a message: sections in the seed's order, pointers as one-line flow maps
 * (`{ type: repo, ref: "repo:..." }`) as in §7, no line folding. The same message always renders to the same
 * text whatever format it arrived in, and `parseAgentMessage(renderAgentMessage(m))` equals `m`. The gateway
 * forwards this text, so the tokens the budget counts are the tokens the recipient receives.
 */
export function renderAgentMessage(message: AgentMessage, options: RenderAgentMessageOptions = {}): string {
  const wire = toWire(message);
  if (options.format === 'json') return `${JSON.stringify(wire, null, 2)}\n`;
  const { Document, isScalar, visit } = yamlModule();
  const doc = new Document(wire);
  visit(doc, {
    Map(_key, node) {
      const isPointer = node.items.length > 0 && node.items.every((pair) => isScalar(pair.key) && POINTER_KEYS.has(String(pair.key.value)));
      if (isPointer && node.items.some((pair) => isScalar(pair.key) && pair.key.value === 'ref')) node.flow = true;
    },
  });
  // lineWidth 0: folding long claims over several lines would change nothing but the token count.
  return doc.toString({ lineWidth: 0, flowCollectionPadding: true });
}

