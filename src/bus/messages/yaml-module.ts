import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

let loaded: typeof Yaml | undefined;

/**
 * The `yaml` package, loaded on first use instead of with the engine: it is 72 modules that every CLI start paid
 * for (~10-20 ms) while only agent messages are YAML (issue #14, "CLI start to first recall"). Node resolves
 * `import 'yaml'` to the same CommonJS build `require` loads, so this is the very module a static import gives.
 */
export function yamlModule(): typeof Yaml {
  loaded ??= createRequire(import.meta.url)('yaml') as typeof Yaml;
  return loaded;
}
