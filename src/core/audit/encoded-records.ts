/**
 * Audit records encoded as they come, for a destination that writes bytes (a file): each record is turned into UTF-8
 * once, when it is pushed, rather than joined with the others into one text that is then encoded again, and its
 * exact size in bytes is known at once.
 */

/** Bytes of each block records are encoded into: a batch under load takes a few. */
export const ENCODED_BLOCK_BYTES = 65_536;
const NEWLINE = 0x0a;

/**
 * Records, each ending in a newline, as UTF-8 bytes (what `Buffer.from(lines.join('\n') + '\n')` makes of them), in
 * blocks of {@link ENCODED_BLOCK_BYTES} (a longer record gets a block of its own). A taken batch shares its block
 * with the records appended after it, in a part of the block they never write.
 *
 * @example
 * const records = new EncodedRecords();
 * records.append('{"n":1}', 1024); // 8
 * records.take().toString(); // '{"n":1}\n'
 */
export class EncodedRecords {
  /** Blocks (the parts of them filled) taken into the next batch, before the current one. */
  #filled: Buffer[] = [];
  #block: Buffer | undefined;
  /** Where the current block's part of the next batch starts, and where its free part starts. */
  #start = 0;
  #end = 0;

  /**
   * Appends `line` (without its newline) and a newline, when they take at most `room` bytes: their size in bytes, or
   * -1 when they do not fit, and then nothing is appended.
   */
  append(line: string, room: number): number {
    // Each UTF-16 code unit takes at most 3 bytes in UTF-8: with that much free, the whole line is written.
    const worst = line.length * 3 + 1;
    let block = this.#block;
    if (block === undefined || block.length - this.#end < worst) block = this.#nextBlock(worst);
    const size = block.write(line, this.#end) + 1;
    if (size > room) return -1;
    block[this.#end + size - 1] = NEWLINE;
    this.#end += size;
    return size;
  }

  /** Whether nothing was appended since the last {@link EncodedRecords.take}. */
  get empty(): boolean {
    return this.#filled.length === 0 && this.#end === this.#start;
  }

  /** Every record appended since the last take, as one buffer (empty when there is none). */
  take(): Buffer {
    const block = this.#block;
    if (block !== undefined && this.#end > this.#start) this.#filled.push(block.subarray(this.#start, this.#end));
    this.#start = this.#end;
    const filled = this.#filled;
    this.#filled = [];
    return filled.length === 1 ? filled[0]! : Buffer.concat(filled);
  }

  #nextBlock(worst: number): Buffer {
    if (this.#block !== undefined && this.#end > this.#start) this.#filled.push(this.#block.subarray(this.#start, this.#end));
    this.#block = Buffer.allocUnsafeSlow(Math.max(ENCODED_BLOCK_BYTES, worst));
    this.#start = 0;
    this.#end = 0;
    return this.#block;
  }
}
