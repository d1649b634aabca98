import { readFileSync } from 'node:fs';

/**
 * The `version` of Engram's package.json, the one version the CLI (`--version`), the HTTP API (OpenAPI
 * document) and the MCP servers report. Read at load time from the package root, which is three folders up
 * both from this file under src/ (run through tsx or vitest) and from its build under dist/.
 */
export const PACKAGE_VERSION: string = readPackageVersion();

function readPackageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  if (typeof manifest.version !== 'string') throw new Error('package.json has no version');
  return manifest.version;
}
