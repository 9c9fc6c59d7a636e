/**
 * The cloud-config stub for an offloaded document, shaped like CAPA's (capi.md §7.3): a MIME
 * multipart whose `text/cloud-boothook` part fetches the document from S3 with the instance role
 * and whose `text/x-include-url` part makes cloud-init process it. The user data then holds no
 * secret and no bearer URL: reading it gives only the object's name and hash.
 *
 * The image needs, as CAPA's images do:
 * - the AWS CLI (`aws`) on PATH, and an instance role allowed `s3:GetObject` on the object
 *   (and `s3:DeleteObject`, if the node is to delete it after reading);
 * - cloud-init tolerating the include of a file that does not exist yet: cloud-init resolves
 *   includes before it runs boothooks, so the first pass cannot find the file. cloud-init ≥ 20.3
 *   raises there unless `ERROR_ON_USER_DATA_FAILURE = False` is patched in, as Kubernetes
 *   image-builder does for CAPA. The boothook then restarts cloud-init, which includes the file.
 */

/** Root-only: the document holds CA keys. Tests replace this line to stay out of /etc. */
export const FETCHED_USER_DATA_PATH = '/etc/secret-userdata.txt'
const BOUNDARY = '==constellation-bootstrap-stub=='

export interface BoothookSource {
  bucket: string
  key: string
  /** Hex sha256 of the full document; the boothook refuses anything else. */
  sha256: string
  region: string
  /** A non-AWS endpoint (--s3-endpoint); AWS S3 itself needs none. */
  endpoint?: string
}

/** A POSIX shell word that stays one literal word whatever it holds. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

export function renderBoothookStub(src: BoothookSource): string {
  const script = boothookScript(src)
  const parts = [
    part('text/cloud-boothook', 'fetch-bootstrap-data.sh', script),
    part('text/x-include-url', 'include-bootstrap-data', `file://${FETCHED_USER_DATA_PATH}\n`),
  ]
  // A part that held the boundary would split the message; quoting keeps keys on one line, but
  // check rather than trust that.
  if (parts.some((p) => p.includes(`--${BOUNDARY}`))) {
    throw new Error(`the boothook stub for s3://${src.bucket}/${src.key} contains its MIME boundary`)
  }
  return [
    `Content-Type: multipart/mixed; boundary="${BOUNDARY}"`,
    'MIME-Version: 1.0',
    '',
    ...parts.map((p) => `--${BOUNDARY}\n${p}`),
    `--${BOUNDARY}--`,
    '',
  ].join('\n')
}

function part(type: string, filename: string, body: string): string {
  return [
    `Content-Type: ${type}; charset="us-ascii"`,
    'MIME-Version: 1.0',
    'Content-Transfer-Encoding: 7bit',
    `Content-Disposition: attachment; filename="${filename}"`,
    '',
    body.trimEnd(),
  ].join('\n')
}

/**
 * cloud-init runs boothooks on every boot: a file already fetched and verified is kept, so a
 * reboot after the object was deleted still works. Every value is single-quoted; nothing from the
 * input is ever expanded by the shell.
 */
function boothookScript(src: BoothookSource): string {
  const aws = [`--region ${shellQuote(src.region)}`]
  if (src.endpoint !== undefined) aws.push(`--endpoint-url ${shellQuote(src.endpoint)}`)
  return `#!/bin/bash
# constellation bootstrap-data: fetch this machine's bootstrap data with the instance role.
# Needs the AWS CLI in the image (as CAPA's boothook does).
set -o errexit -o nounset -o pipefail
umask 077
SOURCE=${shellQuote(`s3://${src.bucket}/${src.key}`)}
SHA256=${shellQuote(src.sha256)}
OUT=${shellQuote(FETCHED_USER_DATA_PATH)}
ATTEMPTS=10
DELAY=10
AWS_ARGS=(${aws.join(' ')})
RESTART=(systemctl restart cloud-init.service)
log() { echo "constellation bootstrap-data: $*" >&2; }
verified() { [ "$(sha256sum "$1" | cut -d ' ' -f 1)" = "$SHA256" ]; }
if [ -f "$OUT" ] && verified "$OUT"; then log "$OUT already fetched and verified"; exit 0; fi
TMP=$(mktemp "$OUT.XXXXXX")
trap 'rm -f "$TMP"' EXIT
fetched=0
for ((i = 1; i <= ATTEMPTS; i++)); do
  if aws "\${AWS_ARGS[@]}" s3 cp --only-show-errors "$SOURCE" "$TMP"; then fetched=1; break; fi
  log "fetching $SOURCE failed (attempt $i of $ATTEMPTS)"
  if ((i < ATTEMPTS)); then sleep "$DELAY"; fi
done
if [ "$fetched" != 1 ]; then log "FATAL: could not fetch $SOURCE with the instance role"; exit 1; fi
if ! verified "$TMP"; then log "FATAL: $SOURCE does not have the expected sha256: refusing it"; exit 1; fi
chmod 0600 "$TMP"
mv -f "$TMP" "$OUT"
trap - EXIT
log "fetched and verified $SOURCE into $OUT"
# The object holds CA keys: take it away now if the role may (s3:DeleteObject); otherwise the
# platform's cleanup (CAPA's nodeRef rule, a lifecycle rule) does it later.
aws "\${AWS_ARGS[@]}" s3 rm --only-show-errors "$SOURCE" || log "could not delete $SOURCE (no s3:DeleteObject?); leaving it to the platform's cleanup"
"\${RESTART[@]}" || log "could not restart cloud-init; reboot to apply the bootstrap data"
`
}
