/** Text rendering of a bootstrap-data run (the command prints it; --json prints the result itself). */
import type { OffloadResult } from './delivery.js'
import type { GenerateResult } from './generate.js'

export function renderGenerateResult(r: GenerateResult): string {
  const lines = r.machines.flatMap((m) => {
    const line = `${m.machine} (${m.role}, ${m.format}): ${m.file}, ${m.bytes} bytes`
    return m.offload ? [`${line} → offloaded to ${m.offload.object}`, ...offloadLines(m.offload)] : [line]
  })
  for (const w of r.waiting) lines.push(`${w.machine}: waiting, ${w.reason}`)
  if (r.caFilesCreated.length > 0) lines.push(`Generated the cluster CAs in ${r.caDir}`)
  if (r.caSecrets) {
    const { namespace, cluster, created } = r.caSecrets
    const names = `Secrets ${namespace}/${cluster}-ca, -etcd, -proxy, -sa`
    lines.push(
      created.length > 0
        ? `Generated the cluster CAs as ${names} in the management cluster`
        : `Using the cluster CAs of ${names} in the management cluster`,
    )
  }
  if (r.adminKubeconfig) lines.push(`Admin kubeconfig: ${r.adminKubeconfig}`)
  if (r.tokenSecret) {
    const where = r.tokenSecret.registered
      ? 'registered in the workload cluster'
      : `written to ${r.tokenSecret.file}; apply it to the workload cluster`
    lines.push(
      `Bootstrap token Secret kube-system/${r.tokenSecret.name} (expires ${r.tokenSecret.expires}) ${where}`,
    )
  }
  return lines.join('\n')
}

function offloadLines(o: OffloadResult): string[] {
  const how =
    o.access === 'instance-role'
      ? 'the node fetches it with its instance role'
      : `presigned URL, valid until ${o.urlExpires ?? '?'}: anyone who can read the user data can fetch it until then`
  return [
    `  stub ${o.stubBytes} bytes; ${how}`,
    `  delete ${o.deleteAfterRead} once the node has read it (CAPA: when the Machine has a nodeRef; fallback: a bucket lifecycle rule)`,
  ]
}
