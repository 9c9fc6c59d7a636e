/**
 * Text from helm or the cluster on its way to a terminal or a report. Control characters could
 * move the cursor, rewrite earlier lines or retitle the window, so every one but newline and tab
 * is shown escaped (`\x1b`), as are the invisible bidi overrides that reorder what is read.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0)
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16)}`
  })
}
