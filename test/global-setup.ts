import { execFileSync } from 'node:child_process';

/** The CLI tests run the built `bin/engram.js`, as a user would after `npm ci`: build once, fresh. */
export default function setup(): void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
