/** Text rendering of a bootstrap-data run (the command prints it; --json prints the result itself). */
import type { GenerateResult } from './generate.js'

export function renderGenerateResult(r: GenerateResult): string {
  const lines = r.machines.map((m) => {
    const offload = m.offload ? ` → offloaded to ${m.offload.object} (stub ${m.offload.stubBytes} bytes)` : ''
    return `${m.machine} (${m.role}, ${m.format}): ${m.file}, ${m.bytes} bytes${offload}`
  })
  for (const w of r.waiting) lines.push(`${w.machine}: waiting, ${w.reason}`)
  if (r.caFilesCreated.length > 0) lines.push(`Generated the cluster CAs in ${r.caDir}`)
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
