/**
 * A watch response body as the API server writes it (one JSON object per
 * line, `{"type":..., "object":...}`), read into batches: every event that a
 * network read completed, so the caller reacts once per burst.
 *
 * @module
 */

/** Raised when a watch line is not JSON or is longer than allowed. */
export class WatchFramingError extends Error {
  /** @param message What was wrong. */
  constructor(message: string) {
    super(message);
    this.name = "WatchFramingError";
  }
}

/**
 * Splits a watch body into parsed lines, a batch per network read.
 *
 * @param body The response body.
 * @param maxLineBytes Longest line accepted (one pod), in UTF-16 code units.
 * @returns The batches; the generator ends with the body.
 * @throws {WatchFramingError} On a line that is not JSON or is too long.
 */
export async function* watchLineBatches(
  body: ReadableStream<Uint8Array>,
  maxLineBytes: number,
): AsyncGenerator<unknown[]> {
  const decoder = new TextDecoder();
  let pending = "";
  const reader = body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      const batch: unknown[] = [];
      let start = 0;
      let at: number;
      while ((at = pending.indexOf("\n", start)) >= 0) {
        const line = pending.slice(start, at).trim();
        start = at + 1;
        if (line === "") continue;
        try {
          batch.push(JSON.parse(line));
        } catch {
          throw new WatchFramingError(`a watch line is not JSON: ${line.slice(0, 120)}`);
        }
      }
      pending = pending.slice(start);
      if (pending.length > maxLineBytes) {
        throw new WatchFramingError(`a watch line is longer than ${maxLineBytes} characters`);
      }
      if (batch.length > 0) yield batch;
    }
    const rest = (pending + decoder.decode()).trim();
    if (rest !== "") {
      // The server ended mid-line: the connection broke, not the framing.
      throw new TypeError("the watch ended in the middle of an event");
    }
  } finally {
    await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}
