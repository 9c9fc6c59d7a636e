/**
 * Rules for the strings of the input that end up as file names, systemd unit lines, sudoers
 * entries or decoded file bytes. cloud-config escapes what it writes, but Ignition units, sudoers
 * files and our own output paths take the text as it is, so these are refused up front, where the
 * input file, key path and line can still be named. Pure: values in, problems out.
 */
import type { KeyPath, Problem } from '../yaml/index.js'

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const DNS_LABEL_MAX = 63
const DNS_SUBDOMAIN_MAX = 253
/** C0, DEL, C1 and the Unicode line/paragraph separators: each can end a line somewhere. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
/** A Linux user or group name as useradd and sudo accept it; no path separator, no whitespace. */
const USER_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*\$?$/
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
/** Read/write/execute for owner, group and others; no setuid, setgid or sticky bit. */
const FILE_MODE = /^0?[0-7]{3}$/
const SPECIAL_FILE_MODE = /^[0-7]{4}$/
const NUMERIC_ID = /^(0|[1-9][0-9]{0,9})$/
/** (uid_t)-1 means "leave unchanged" to chown, so it can never name an owner. */
const MAX_ID = 0xffff_fffe

/**
 * Kubernetes name rules per kind: a Cluster name is a DNS label (CAPI uses it as the
 * `cluster.x-k8s.io/cluster-name` label value and as a prefix of other names), every other kind a
 * DNS subdomain, as the API server checks them. Both also keep names usable as file names.
 */
export function kubernetesNameProblems(kind: string, name: unknown): Problem[] {
  if (typeof name !== 'string') return [] // the schema reports a missing or non-string name
  const label = kind === 'Cluster'
  const max = label ? DNS_LABEL_MAX : DNS_SUBDOMAIN_MAX
  const path = ['metadata', 'name']
  if (name.length > max) {
    return [
      { path, message: `${JSON.stringify(name)} is not a valid name: must be at most ${max} characters` },
    ]
  }
  if ((label ? DNS_LABEL : DNS_SUBDOMAIN).test(name)) return []
  const rule = label
    ? 'a lowercase RFC 1123 label: lower case letters, digits and "-", starting and ending with a letter or digit'
    : 'a lowercase RFC 1123 subdomain: lower case letters, digits, "-" and ".", starting and ending with a letter or digit'
  return [{ path, message: `${JSON.stringify(name)} is not a valid name: a ${kind} name must be ${rule}` }]
}

export function userNameProblem(name: string, path: KeyPath): Problem | undefined {
  if (USER_NAME.test(name) || CONTROL.test(name)) return undefined // control characters: reported once, by the walk
  return {
    path,
    message: `${JSON.stringify(name)} is not a valid user name: letters, digits, "_", "." and "-", not starting with a digit, "." or "-" (it becomes a file name under /etc/sudoers.d)`,
  }
}

/**
 * A file mode as 3 octal digits, optionally after a leading 0. A setuid, setgid or sticky bit is
 * refused: a setuid file written from user data is a root foothold, and sticky means nothing on a file.
 */
export function fileModeProblem(mode: string, path: KeyPath): Problem | undefined {
  if (FILE_MODE.test(mode)) return undefined
  const message = SPECIAL_FILE_MODE.test(mode)
    ? `${JSON.stringify(mode)} sets a setuid, setgid or sticky bit, which bootstrap data never writes (a setuid file from user data is a root foothold); use "0${mode.slice(1)}"`
    : `${JSON.stringify(mode)} is not a file mode: 3 octal digits, optionally after a leading 0, e.g. "0644"`
  return { path, message }
}

/**
 * `user` or `user:group`, each a name as users[].name takes it (so a user the spec creates can own
 * a file) or a numeric id. cloud-init looks both up by name only, so ids work with Ignition alone.
 */
export function fileOwnerProblem(owner: string, path: KeyPath, numericIds: boolean): Problem | undefined {
  if (CONTROL.test(owner)) return undefined // reported once, by the walk
  const parts = owner.split(':')
  const isId = (p: string) => NUMERIC_ID.test(p) && Number(p) <= MAX_ID
  if (parts.length > 2 || !parts.every((p) => USER_NAME.test(p) || isId(p))) {
    return {
      path,
      message: `${JSON.stringify(owner)} is not a valid owner: "user" or "user:group", each a name (letters, digits, "_", "." and "-", not starting with a digit, "." or "-") or a numeric id`,
    }
  }
  if (!numericIds && parts.some(isId)) {
    return {
      path,
      message: `numeric ids do not work with cloud-config: cloud-init looks owners up by name ("Unknown user or group"); use names, or the ignition format`,
    }
  }
  return undefined
}

/**
 * Every string under `value` that contains a control character, except at paths `multiLine`
 * accepts (file contents and shell commands, where a newline is data).
 */
export function controlCharacterProblems(
  value: unknown,
  path: KeyPath,
  multiLine: (path: KeyPath) => boolean = () => false,
): Problem[] {
  if (multiLine(path)) return []
  if (typeof value === 'string') {
    const found = CONTROL.exec(value)?.[0]
    return found === undefined
      ? []
      : [{ path, message: `must not contain control characters (found "${escapeChar(found)}")` }]
  }
  if (Array.isArray(value))
    return value.flatMap((v, i) => controlCharacterProblems(v, [...path, i], multiLine))
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => controlCharacterProblems(v, [...path, k], multiLine))
  }
  return []
}

/** Strict base64 (line breaks allowed, as cloud-init's decoder ignores them). */
export function isBase64(text: string): boolean {
  const compact = text.replace(/\s/g, '')
  return compact.length % 4 === 0 && BASE64.test(compact)
}

/** gzip's magic bytes at the start of the decoded data. */
export function isGzipBase64(text: string): boolean {
  const bytes = Buffer.from(text.replace(/\s/g, ''), 'base64')
  return bytes[0] === 0x1f && bytes[1] === 0x8b
}

function escapeChar(c: string): string {
  const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }
  return named[c] ?? `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`
}
