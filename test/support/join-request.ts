/**
 * A genuine join request for node `name` at `address`: a fresh P-256 key's CSR and a new disk UUID,
 * as the join client sends it.
 */
import { randomUUID } from 'node:crypto'
import type { IssueJoinTicketRequest } from '../../src/gen/join.js'
import { createCsr, generateEcdsaP256KeyPair } from '../../src/lib/x509/index.js'

export async function genuineJoinRequest(
  name: string,
  address = '127.0.0.1',
): Promise<IssueJoinTicketRequest> {
  const { privateKey } = await generateEcdsaP256KeyPair()
  return {
    diskUuid: randomUUID(),
    isControlPlane: false,
    hostPublicKey: Buffer.alloc(0),
    hostCertificatePrincipals: [],
    certificateRequest: createCsr({
      key: privateKey,
      subject: [
        ['CN', `system:node:${name}`],
        ['O', 'system:nodes'],
      ],
      ipSans: [address],
      dnsSans: [name],
    }),
  }
}
