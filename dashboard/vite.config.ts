import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

/**
 * The dashboard (issue #18) is built by `npm run build` into dist/dashboard/, which `engram serve` serves at `/`
 * (src/interfaces/http/dashboard-serve.ts). No runtime build, no network: every asset is in the package.
 */
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 400,
  },
  logLevel: 'warn',
});
