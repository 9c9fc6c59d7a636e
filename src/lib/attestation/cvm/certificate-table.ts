/** The extended report's certificate table, as the PEM InstanceInfo carries (signer, then ASK/ASVK and ARK). */
import { toPem } from '../../x509/index.js'
import { AttestationError } from '../errors.js'
import { parseCertificateTable } from '../snp/index.js'
import type { CvmVariant } from '../variant.js'

export function certificateTableToPem(
  table: Buffer | undefined,
  variant: CvmVariant,
): { signer: Buffer; chain: Buffer } {
  if (!table || table.length === 0)
    throw new AttestationError(
      `${variant}: the SEV-SNP extended report came without a certificate table (auxblob), so there is no VCEK or VLEK to verify it with`,
    )
  const certs = parseCertificateTable(table)
  const signer = variant === 'aws-sev-snp' ? certs.vlek : (certs.vcek ?? certs.vlek)
  if (!signer)
    throw new AttestationError(
      `${variant}: the certificate table holds no ${variant === 'aws-sev-snp' ? 'VLEK' : 'VCEK or VLEK'}`,
    )
  const chain = [certs.ask ?? certs.asvk, certs.ark].filter((c): c is Buffer => c !== undefined)
  return {
    signer: Buffer.from(toPem(signer)),
    chain: Buffer.from(chain.map((c) => toPem(c)).join('')),
  }
}
