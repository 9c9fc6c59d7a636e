/**
 * Who asks: the one instance the cluster's metadata lists at the address a request came from (its
 * name and role), and the TPM its attested connection proved (the AK's Name). Nothing here comes
 * from the request's fields: they are checked against this.
 */
import type { ValidationResult } from '../attestation/index.js'
import { kubernetesNodeName, type NodeRole } from '../nodeconfig/index.js'
import type { MemberDirectory } from './members.js'
import { JoinRefusedError, TicketStepError } from './refusals.js'

export interface PeerIdentity {
  /** The Kubernetes node name of the instance the metadata lists at `address`. */
  node: string
  role: NodeRole
  address: string
  /** Hex Name of the attestation key the connection proved. */
  tpm: string
}

export async function identifyPeer(
  members: MemberDirectory,
  address: string,
  attestation: Pick<ValidationResult, 'akName'> | undefined,
): Promise<PeerIdentity> {
  // the listener refuses unattested calls before any handler: this is the second lock of the door
  if (!attestation) throw new JoinRefusedError('permission-denied', 'the connection is not attested')
  const listed = await members.at(address).catch((cause: unknown) => {
    throw new TicketStepError('asking the metadata service which node has this address', cause)
  })
  const [member, ...more] = listed
  if (!member)
    throw new JoinRefusedError(
      'permission-denied',
      `peer address ${address}: the cluster's metadata lists no instance there; only its members may join`,
    )
  if (more.length > 0)
    throw new JoinRefusedError(
      'permission-denied',
      `peer address ${address}: the cluster's metadata lists several instances there (${listed.map((m) => m.name).join(', ')}); the join service cannot tell which node asks`,
    )
  return {
    node: kubernetesNodeName(member.name),
    role: member.role,
    address,
    tpm: attestation.akName.toString('hex'),
  }
}
