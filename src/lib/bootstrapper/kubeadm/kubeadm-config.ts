/** The kubeadm init configuration: data in, multi-document YAML out (v1beta3 up to 1.30, v1beta4 from 1.31). */
import { API_SERVER_PORT } from '../../contract/index.js'
import type { NodePaths } from '../../paths.js'
import { kubeadmApiVersion } from '../../versions/index.js'
import { stringifyYaml } from '../../yaml/index.js'

export interface KubeadmInitInput {
  kubernetesVersion: string
  clusterName: string
  nodeName: string
  nodeIP: string
  /** Load balancer host (no port) the kubeconfig and joining nodes use. */
  controlPlaneEndpoint: string
  certSANs: readonly string[]
  serviceCIDR: string
  conformance: boolean
  paths: {
    certificatesDir: string
    patchesDir: string
    staticPodPath: string
    auditPolicy: string
    auditLogDir: string
    kubeletCert: string
    kubeletKey: string
    kubeletCa: string
  }
}

/** Where kubeadm reads and writes on this node, all under the node root. */
export function kubeadmPaths(p: NodePaths): KubeadmInitInput['paths'] {
  return {
    certificatesDir: p.kubernetesPki,
    patchesDir: p.kubeadmPatchDir,
    staticPodPath: p.manifestsDir,
    auditPolicy: p.auditPolicy,
    auditLogDir: p.auditLogDir,
    kubeletCert: p.kubeletClientCert,
    kubeletKey: p.kubeletClientKey,
    kubeletCa: `${p.kubernetesPki}/ca.crt`,
  }
}

export const CRI_SOCKET = 'unix:///run/containerd/containerd.sock'
const KUBELET_API_VERSION = 'kubelet.config.k8s.io/v1beta1'

/** Phases kubeadm init skips: we ran preflight and certs already, Helm installs CoreDNS, Cilium replaces kube-proxy. */
export function skippedInitPhases(conformance: boolean): string[] {
  return ['preflight', 'certs', 'addon/coredns', ...(conformance ? [] : ['addon/kube-proxy'])]
}

export function renderKubeadmInitConfig(input: KubeadmInitInput): string {
  const apiVersion = kubeadmApiVersion(input.kubernetesVersion)
  const v1beta4 = apiVersion.endsWith('v1beta4')
  // v1beta4 turned extraArgs maps into ordered {name, value} lists.
  const args = (m: Record<string, string>) =>
    v1beta4 ? Object.entries(m).map(([name, value]) => ({ name, value })) : { ...m }
  const p = input.paths
  const init = {
    apiVersion,
    kind: 'InitConfiguration',
    nodeRegistration: {
      name: input.nodeName,
      criSocket: CRI_SOCKET,
      kubeletExtraArgs: args({ 'node-ip': input.nodeIP }),
    },
    localAPIEndpoint: { advertiseAddress: input.nodeIP, bindPort: API_SERVER_PORT },
    patches: { directory: p.patchesDir },
  }
  const cluster = {
    apiVersion,
    kind: 'ClusterConfiguration',
    clusterName: input.clusterName,
    kubernetesVersion: input.kubernetesVersion,
    controlPlaneEndpoint: input.controlPlaneEndpoint,
    certificatesDir: p.certificatesDir,
    networking: { serviceSubnet: input.serviceCIDR },
    apiServer: {
      certSANs: dedupe(['127.0.0.1', input.nodeIP, ...input.certSANs]),
      extraArgs: args({
        'audit-policy-file': p.auditPolicy,
        'audit-log-path': `${p.auditLogDir}/audit.log`,
        'audit-log-maxage': '30',
        'audit-log-maxbackup': '10',
        'audit-log-maxsize': '100',
        profiling: 'false',
        'kubelet-certificate-authority': p.kubeletCa,
      }),
      extraVolumes: [
        {
          name: 'audit-log',
          hostPath: p.auditLogDir,
          mountPath: p.auditLogDir,
          pathType: 'DirectoryOrCreate',
        },
        {
          name: 'audit',
          hostPath: p.auditPolicy,
          mountPath: p.auditPolicy,
          readOnly: true,
          pathType: 'File',
        },
      ],
    },
    controllerManager: {
      extraArgs: args({
        'configure-cloud-routes': 'false',
        profiling: 'false',
        'terminated-pod-gc-threshold': '1000',
      }),
    },
    scheduler: { extraArgs: args({ profiling: 'false' }) },
    ...(v1beta4 ? { featureGates: { ControlPlaneKubeletLocalMode: true } } : {}),
  }
  const kubelet = {
    apiVersion: KUBELET_API_VERSION,
    kind: 'KubeletConfiguration',
    protectKernelDefaults: true,
    staticPodPath: p.staticPodPath,
    tlsCertFile: p.kubeletCert,
    tlsPrivateKeyFile: p.kubeletKey,
    tlsCipherSuites: [
      'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
      'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
      'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
      'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
      'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256',
      'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
      'TLS_RSA_WITH_AES_128_GCM_SHA256',
      'TLS_RSA_WITH_AES_256_GCM_SHA384',
    ],
    registerWithTaints: [
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'PreferNoSchedule' },
      { key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'PreferNoSchedule' },
    ],
  }
  return [init, cluster, kubelet].map((doc) => stringifyYaml(doc)).join('---\n')
}

/** The audit policy the API server's flags point at. */
export function renderAuditPolicy(): string {
  return stringifyYaml({ apiVersion: 'audit.k8s.io/v1', kind: 'Policy', rules: [{ level: 'Metadata' }] })
}

function dedupe(values: readonly string[]): string[] {
  return [...new Set(values.filter((v) => v !== ''))]
}
