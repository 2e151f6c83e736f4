/** The first block is small (most agents hold few records); each next one doubles, up to the largest. */
const FIRST_BLOCK_BYTES = 4 * 1024;
const LARGEST_BLOCK_BYTES = 256 * 1024;

/**
 * An append-only list of texts kept as UTF-8 in off-heap blocks. Holding a long history as JS
 * strings makes the garbage collector copy every new one through the young generation, which
 * then grows and stays large; bytes written into blocks never enter the JS heap at all.
 */
export class TextArena {
  #blocks: Buffer[] = [];
  #used = 0;
  /** Per text: its block, its first byte, its byte length. */
  #block = new Uint32Array(16);
  #start = new Uint32Array(16);
  #length = new Uint32Array(16);
  #count = 0;
  #bytes = 0;

  get count(): number {
    return this.#count;
  }

  /** UTF-8 bytes of all texts. */
  get bytes(): number {
    return this.#bytes;
  }

  push(text: string): void {
    const size = Buffer.byteLength(text, "utf8");
    const current = this.#blocks.at(-1);
    if (current === undefined || this.#used + size > current.length) {
      const next = Math.min(LARGEST_BLOCK_BYTES, current === undefined ? FIRST_BLOCK_BYTES : current.length * 2);
      // Unpooled: a pooled slice would keep Node's shared 8 KiB pool pages alive with it.
      this.#blocks.push(Buffer.allocUnsafeSlow(Math.max(next, size)));
      this.#used = 0;
    }
    if (this.#count === this.#block.length) this.#grow();
    const index = this.#count;
    const block = this.#blocks.length - 1;
    this.#blocks[block]!.write(text, this.#used, "utf8");
    this.#block[index] = block;
    this.#start[index] = this.#used;
    this.#length[index] = size;
    this.#used += size;
    this.#bytes += size;
    this.#count += 1;
  }

  /** The text at `index` (0 ≤ index < count). */
  at(index: number): string {
    const start = this.#start[index]!;
    return this.#blocks[this.#block[index]!]!.toString("utf8", start, start + this.#length[index]!);
  }

  /** Texts from `start` up to `end`, clamped to what is held. */
  slice(start: number, end = this.#count): string[] {
    const texts: string[] = [];
    for (let index = Math.max(0, start); index < Math.min(end, this.#count); index += 1) texts.push(this.at(index));
    return texts;
  }

  #grow(): void {
    const widen = (array: Uint32Array) => {
      const wider = new Uint32Array(array.length * 2);
      wider.set(array);
      return wider;
    };
    this.#block = widen(this.#block);
    this.#start = widen(this.#start);
    this.#length = widen(this.#length);
  }
}
