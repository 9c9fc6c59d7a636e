/**
 * systemd's ExecStart= command line (systemd.service(5), "Command lines"), for mini's supervisor:
 * the prefixes, words with single or double quotes and C escapes, the %%, %n and %N specifiers, and
 * ${VAR} (inside a word) or $VAR (a word of its own, split at whitespace) from Environment=.
 */
export interface ExecCommand {
  argv: string[]
  /** `-`: a non-zero exit status counts as success. */
  ignoreFailure: boolean
}

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  '"': '"',
  "'": "'",
  ' ': ' ',
}

/** `fail` throws, naming the unit file's line. */
export function parseExecStart(
  value: string,
  unitName: string,
  environment: Record<string, string>,
  fail: (why: string) => never,
): ExecCommand {
  const prefix = /^[-@:+!]*/.exec(value)![0]
  // `@` makes the second word argv[0]; Node's spawn in the supervisor does not set argv[0] apart
  if (prefix.includes('@')) fail('the @ prefix (argv[0] apart from the program) is not supported by mini')
  const expand = !prefix.includes(':')
  const argv: string[] = []
  for (const word of words(value.slice(prefix.length), fail)) {
    const text = specifiers(word.text, unitName, fail)
    const whole = expand && !word.quoted ? /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(text) : null
    if (whole) argv.push(...(environment[whole[1]!] ?? '').split(/\s+/).filter(Boolean))
    else argv.push(expand ? variables(text, environment) : text)
  }
  if (argv.length === 0) fail('ExecStart= names no program')
  // `+`, `!`, `!!` choose privileges; a mini node runs every unit as the user who started it
  return { argv, ignoreFailure: prefix.includes('-') }
}

function words(line: string, fail: (why: string) => never): { text: string; quoted: boolean }[] {
  const out: { text: string; quoted: boolean }[] = []
  let i = 0
  while (i < line.length) {
    while (/\s/.test(line[i] ?? '')) i++
    if (i >= line.length) break
    let text = ''
    let quoted = false
    while (i < line.length && !/\s/.test(line[i]!)) {
      const c = line[i]!
      if (c === '"' || c === "'") {
        quoted = true
        const end = line.indexOf(c, i + 1)
        if (end < 0) fail(`an unterminated ${c} quote`)
        text += unescape(line.slice(i + 1, end), fail)
        i = end + 1
      } else if (c === '\\') {
        text += unescape(line.slice(i, i + 2), fail)
        i += 2
      } else {
        text += c
        i++
      }
    }
    out.push({ text, quoted })
  }
  return out
}

function unescape(text: string, fail: (why: string) => never): string {
  return text.replace(
    /\\(.?)/g,
    (_m, c: string) => ESCAPES[c] ?? fail(`an escape \\${c} systemd does not know`),
  )
}

function specifiers(text: string, unitName: string, fail: (why: string) => never): string {
  return text.replace(/%(.?)/g, (_m, c: string) => {
    if (c === '%') return '%'
    if (c === 'n') return unitName
    if (c === 'N') return unitName.replace(/\.[^.]+$/, '')
    return fail(`the specifier %${c} is not one mini's systemd resolves (%%, %n, %N)`)
  })
}

function variables(text: string, environment: Record<string, string>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name?: string) =>
    name === undefined ? '$' : (environment[name] ?? ''),
  )
}
