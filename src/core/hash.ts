/**
 * FNV-1a, 32 bits, over a string's UTF-16 code units: a fast, stable, non-cryptographic hash
 * (the same value on every machine and Node version). Used to tell that a journal's finished line
 * is still the same line; not for anything an attacker chooses.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
