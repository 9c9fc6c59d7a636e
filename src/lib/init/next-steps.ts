/**
 * What the operator runs after init. The node runs kubeadm without its CoreDNS addon (and without
 * kube-proxy unless --conformance), as Constellation does, whose CLI then installs Cilium and
 * CoreDNS with Helm; this CLI does not do that yet, so it says so and how.
 */
export interface NextStepsInput {
  endpointHost: string
  serviceCIDR: string
  conformance: boolean
  kubeconfig: string
}

export function nextSteps(input: NextStepsInput): string[] {
  const missing = input.conformance
    ? 'no network plugin (CNI) and no cluster DNS'
    : 'no network plugin (CNI), no cluster DNS and no kube-proxy'
  const cilium = input.conformance
    ? ['  # Cilium as the CNI (kube-proxy runs: --conformance kept it)', '--set kubeProxyReplacement=false']
    : [
        '  # Cilium as the CNI; it also replaces kube-proxy, which init did not install',
        `--set kubeProxyReplacement=true --set k8sServiceHost=${input.endpointHost} --set k8sServicePort=6443`,
      ]
  return [
    `The cluster has ${missing} yet: nodes stay NotReady until a CNI runs. Their bring-up becomes part of init in a later version; until then:`,
    `  export KUBECONFIG="${input.kubeconfig}"`,
    cilium[0] ?? '',
    `  helm install cilium cilium --repo https://helm.cilium.io --namespace kube-system ${cilium[1] ?? ''}`,
    '  # CoreDNS at the address kubelets use for DNS (the 10th of serviceCIDR)',
    `  helm install coredns coredns --repo https://coredns.github.io/helm --namespace kube-system --set service.clusterIP=${clusterDnsIp(input.serviceCIDR)}`,
  ]
}

/** kubeadm points kubelets at the 10th address of the service CIDR for DNS. */
export function clusterDnsIp(serviceCIDR: string): string {
  const [ip] = serviceCIDR.split('/')
  const octets = (ip ?? '').split('.').map(Number)
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o))) return '<10th address of serviceCIDR>'
  const n =
    ((octets[0] ?? 0) * 2 ** 24 +
      (octets[1] ?? 0) * 2 ** 16 +
      (octets[2] ?? 0) * 2 ** 8 +
      (octets[3] ?? 0) +
      10) >>>
    0
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
}
