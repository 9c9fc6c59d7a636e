/**
 * Intel signs the exact bytes of a member's JSON text ("tcbInfo", "enclaveIdentity"), not a
 * canonical form, so the verifier must find that text in the body as served.
 */

/**
 * The raw text of each top-level member's value in a JSON object text that JSON.parse accepted;
 * undefined when a name occurs twice (JSON.parse would keep the last, a signature check the first).
 */
export function topLevelMembers(text: string): Map<string, string> | undefined {
  const members = new Map<string, string>()
  let i = skipSpace(text, 0)
  if (text[i] !== '{') return undefined
  i = skipSpace(text, i + 1)
  if (text[i] === '}') return members
  for (;;) {
    if (text[i] !== '"') return undefined
    const keyEnd = stringEnd(text, i)
    const key = JSON.parse(text.slice(i, keyEnd)) as string
    i = skipSpace(text, keyEnd)
    if (text[i] !== ':') return undefined
    const start = skipSpace(text, i + 1)
    const end = valueEnd(text, start)
    if (members.has(key)) return undefined
    members.set(key, text.slice(start, end))
    i = skipSpace(text, end)
    if (text[i] === '}') return members
    if (text[i] !== ',') return undefined
    i = skipSpace(text, i + 1)
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && ' \t\r\n'.includes(text[i] as string)) i++
  return i
}

/** Index just past the string starting at i (a quote). */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    if (text[j] === '\\') j++
    else if (text[j] === '"') return j + 1
  }
  return text.length
}

/** Index just past the value starting at i. */
function valueEnd(text: string, i: number): number {
  if (text[i] === '"') return stringEnd(text, i)
  if (text[i] === '{' || text[i] === '[') {
    let depth = 0
    for (let j = i; j < text.length; j++) {
      const c = text[j]
      if (c === '"') j = stringEnd(text, j) - 1
      else if (c === '{' || c === '[') depth++
      else if (c === '}' || c === ']') {
        depth--
        if (depth === 0) return j + 1
      }
    }
    return text.length
  }
  let j = i
  while (j < text.length && !',}] \t\r\n'.includes(text[j] as string)) j++
  return j
}
