/**
 * What the operator runs after `init --skip-helm`. The node runs kubeadm without its CoreDNS addon
 * (and without kube-proxy unless --conformance), as Constellation does: the pinned releases bring
 * the CNI and cluster DNS, and `upgrade execute --helm` installs whichever of them is missing.
 */
export interface NextStepsInput {
  workspace: string
  conformance: boolean
}

export function nextSteps(input: NextStepsInput): string[] {
  const missing = input.conformance
    ? 'no network plugin (CNI) and no cluster DNS'
    : 'no network plugin (CNI), no cluster DNS and no kube-proxy'
  return [
    `The cluster has ${missing} yet (--skip-helm): nodes stay NotReady until a CNI runs. Install the pinned releases (Cilium, CoreDNS, cert-manager) with:`,
    `  constellation upgrade execute --helm --yes -C ${input.workspace}`,
  ]
}
