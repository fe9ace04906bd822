/**
 * Whether a source's new list is its last one over again, item for item: a
 * source that returns the very same array then lets the merge, the cache and
 * the checks downstream pass it by.
 *
 * @module
 */

/**
 * @param a A list.
 * @param b Another.
 * @returns Whether both hold the same objects in the same order.
 */
export function sameItems(a: readonly object[], b: readonly object[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
