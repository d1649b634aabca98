#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm ci` (the `prepare` script).
import { main } from '../dist/interfaces/cli/main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    // main maps every error itself; reaching here is a bug (exit 1, as the documented table says).
    console.error(err);
    process.exitCode = 1;
  },
);
