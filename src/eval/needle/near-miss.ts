/**
 * Near misses: values that look like a needle and differ from it in a way a careless reader (or a lossy
 * summary) would not notice: the same hash prefix, the same file at another line, the same host on another
 * port, one flag changed, one reason swapped. The flood plants them so a wrong answer is available.
 */
import type { NeedleType } from './needle-types.js';
import type { Prng } from '../../util/prng.js';
import { DESIGN_CHOICES, ERROR_CODES, FILES, PORTS, REASONS } from './vocabulary.js';

/** A near miss of `value` (never equal to it). */
export function nearMiss(rng: Prng, type: NeedleType, value: string): string {
  for (let attempt = 0; attempt < 50; attempt++) {
    const candidate = draw(rng, type, value);
    if (candidate !== value) return candidate;
  }
  throw new Error(`near-miss: no variant of ${type} "${value}" found in 50 draws`);
}

function draw(rng: Prng, type: NeedleType, value: string): string {
  switch (type) {
    case 'hash': {
      // The same prefix (what a reader checks first), or one digit changed anywhere.
      if (rng.chance(0.5)) {
        const keep = rng.int(6, 9);
        return value.slice(0, keep) + rng.hex(12 - keep);
      }
      const i = rng.int(0, 11);
      return `${value.slice(0, i)}${rng.hex(1)}${value.slice(i + 1)}`;
    }
    case 'path': {
      const cut = value.lastIndexOf(':');
      const file = value.slice(0, cut);
      const line = Number(value.slice(cut + 1));
      if (rng.chance(0.6)) return `${file}:${Math.max(1, line + rng.pick([-1, 1]) * rng.int(1, 60))}`;
      const dir = file.slice(0, file.lastIndexOf('/') + 1);
      const ext = file.slice(file.lastIndexOf('.'));
      return `${dir}${rng.pick(FILES)}${ext}:${line}`;
    }
    case 'error': {
      const [code, address] = value.split(' ') as [string, string];
      const [ip, port] = address.split(':') as [string, string];
      const r = rng.next();
      if (r < 0.4) return `${code} ${ip}:${rng.chance(0.5) ? Number(port) + 1 : rng.pick(PORTS)}`;
      if (r < 0.75) {
        const octets = ip.split('.');
        octets[3] = String(Math.min(254, Math.max(1, Number(octets[3]) + rng.pick([-1, 1]) * rng.int(1, 5))));
        return `${code} ${octets.join('.')}:${port}`;
      }
      return `${rng.pick(ERROR_CODES)} ${address}`;
    }
    case 'parameter': {
      const numbers = [...value.matchAll(/\d+/g)];
      const m = rng.pick(numbers);
      const n = Number(m[0]);
      const changed = Math.max(1, n + rng.pick([-1, 1]) * Math.max(1, Math.round(n * rng.int(1, 5) / 10)));
      return `${value.slice(0, m.index)}${changed}${value.slice(m.index + m[0].length)}`;
    }
    case 'rationale': {
      const parts = value.split(' and ');
      if (parts.length === 2 && REASONS.includes(parts[0] as never)) {
        const i = rng.int(0, 1);
        parts[i] = rng.pick(REASONS.filter((r) => !parts.includes(r)));
        return parts.join(' and ');
      }
      return rng.pick(DESIGN_CHOICES)[2];
    }
  }
}

/**
 * Whether `other` looks like a near miss of `value` (what {@link nearMiss} makes, or what a trace holds by
 * chance): a hash sharing six aligned digits, the same file or line, the same code or address or port, one
 * flag in common, or one reason in common.
 */
export function isNearMissOf(other: string, value: string, type: NeedleType): boolean {
  if (other === value) return false;
  switch (type) {
    case 'hash':
      return [...other].filter((ch, i) => ch === value[i]).length >= 6;
    case 'path': {
      const [a, b] = [other.lastIndexOf(':'), value.lastIndexOf(':')];
      return other.slice(0, a) === value.slice(0, b) || other.slice(a) === value.slice(b);
    }
    case 'error': {
      const [code, address] = other.split(' ') as [string, string];
      const [vCode, vAddress] = value.split(' ') as [string, string];
      return (code === vCode && (address.split(':')[0] === vAddress.split(':')[0] || address.split(':')[1] === vAddress.split(':')[1])) || address === vAddress;
    }
    case 'parameter':
      return other.split(' ').some((flag) => value.split(' ').includes(flag));
    case 'rationale':
      return other.split(' and ').some((reason) => value.split(' and ').includes(reason));
  }
}
