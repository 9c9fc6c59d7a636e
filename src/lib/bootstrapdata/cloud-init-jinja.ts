/**
 * Makes a cloud-config document safe under cloud-init's Jinja. A `## template: jinja` document is
 * rendered before its YAML is parsed, by an unsandboxed Jinja running as root: `{{ … }}`, `{% … %}`
 * and `{# … #}` anywhere in it run. The only Jinja let through is an instance-data reference, a
 * dotted name under cloud-init's instance data such as `{{ ds.meta_data.local_hostname }}` (no
 * calls, filters or `_` names), which CAPI templates rely on; every other `{` becomes Jinja's own
 * escape for a literal brace. File bodies hold no `{` by now (cloud-init-sections.ts base64s them).
 */

export const JINJA_HEADER = '## template: jinja\n'

/** Top-level names of cloud-init's instance data: `ds`, `v1`, and v1's keys, which it also puts at the top. */
const INSTANCE_DATA_ROOTS = [
  'ds',
  'v1',
  'v2',
  'availability_zone',
  'cloud_id',
  'cloud_name',
  'distro',
  'distro_release',
  'distro_version',
  'instance_id',
  'kernel_release',
  'local_hostname',
  'machine',
  'platform',
  'public_ssh_keys',
  'python_version',
  'region',
  'subplatform',
  'system_platform',
  'variant',
] as const
const INSTANCE_DATA_REF = new RegExp(
  `\\{\\{ *(?:${INSTANCE_DATA_ROOTS.join('|')})(?:\\.[A-Za-z]\\w*)* *\\}\\}`,
)
const REF_OR_BRACE = new RegExp(`${INSTANCE_DATA_REF.source}|\\{`, 'g')
/** Renders to "{"; Jinja runs before YAML parsing, so the quotes never reach the YAML. */
const LITERAL_BRACE = "{{'{'}}"

/**
 * The document as cloud-init should get it: a template only when it refers to instance data (a
 * document with nothing to fill is not rendered at all), with every other `{` made literal.
 */
export function jinjaSafeDocument(document: string): string {
  if (!INSTANCE_DATA_REF.test(document)) return document
  return JINJA_HEADER + document.replace(REF_OR_BRACE, (m) => (m === '{' ? LITERAL_BRACE : m))
}
