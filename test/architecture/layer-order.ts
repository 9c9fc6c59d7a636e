/** The layer order of src/lib, lowest first (docs/architecture.md): a domain may import only lower layers. */
export const LAYERS: readonly (readonly string[])[] = [
  ['errors'],
  ['system'],
  ['yaml', 'ui', 'contract'],
  ['tpm', 'tsm', 'versions', 'x509', 'grpc', 'kube', 'measurements', 'vm'],
  ['kms', 'attestation', 'nodeupgrade'],
  ['atls', 'statedisk', 'cvm-standin'],
  ['simulator'],
  ['config'],
  ['nodeconfig', 'helm'],
  ['bootstrapper', 'init', 'verify', 'upgrade', 'bootstrapdata', 'joinservice', 'recover', 'nodes'],
  ['mini', 'status'],
]

export function layerOf(domain: string): number {
  const i = LAYERS.findIndex((layer) => layer.includes(domain))
  if (i < 0) throw new Error(`domain ${domain} is in no layer of test/architecture/layer-order.ts`)
  return i
}
