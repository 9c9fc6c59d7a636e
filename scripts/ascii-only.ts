/**
 * The bundle with every non-ASCII UTF-16 unit written as a \uXXXX escape. V8 keeps a script's
 * source for as long as the process lives, and one character above U+00FF makes it a two-byte
 * string: a "→" in a comment cost every process 1.9 MB. esbuild escapes strings but leaves
 * comments and regular expression literals as written; in both the escape means the same (in a
 * comment it is text, in a pattern the same character, and with the u flag a surrogate pair of
 * escapes the same code point).
 */
export function asciiOnly(text: string): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
