/**
 * The pinned Kubernetes releases this tool installs: every binary by URL and SHA-256, every
 * control-plane static-pod image by digest. Update a row by downloading the files and hashing them.
 */
export interface ReleasePins {
  cniPlugins: { url: string; sha256: string }
  crictl: { url: string; sha256: string }
  kubelet: string
  kubeadm: string
  kubectl: string
  images: { apiserver: string; controllerManager: string; scheduler: string; etcd: string }
}

const CNI_PLUGINS = {
  url: 'https://github.com/containernetworking/plugins/releases/download/v1.8.0/cni-plugins-linux-amd64-v1.8.0.tgz',
  sha256: 'ab3bda535f9d90766cccc90d3dddb5482003dd744d7f22bcf98186bf8eea8be6',
}
const CRICTL = {
  url: 'https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.33.0/crictl-v1.33.0-linux-amd64.tar.gz',
  sha256: '8307399e714626e69d1213a4cd18c8dec3d0201ecdac009b1802115df8973f0f',
}
const ETCD =
  'registry.k8s.io/etcd:3.5.21-0@sha256:d58c035df557080a27387d687092e3fc2b64c6d0e3162dc51453a115f847d121'

/** Keyed by the full version; the newest patch of each supported minor. */
export const RELEASES: Readonly<Record<string, ReleasePins>> = {
  'v1.30.14': {
    cniPlugins: CNI_PLUGINS,
    crictl: CRICTL,
    kubelet: '46baa60748b179164e80f5565d99dad642d554fb431925d211ffa921b917d5c7',
    kubeadm: 'bf1f8af81af8ecf003cbc03a8700c6e94a74c183ee092bbc77b92270ada2be70',
    kubectl: '7ccac981ece0098284d8961973295f5124d78eab7b89ba5023f35591baa16271',
    images: {
      apiserver: 'sha256:be079fe85d6b6804b89ab4fdd6a35cd56341e99ea809881cfe37962f440dc1be',
      controllerManager: 'sha256:eba41d76b6af10af941147e2b449c6d68eaa42c1fd0fc8f0ab8ec2ff0ab84964',
      scheduler: 'sha256:74a5cf9cfa9fcc2246f68c650f1f5c7add20da2145f13800fd97ba1d69fc06c8',
      etcd: ETCD,
    },
  },
  'v1.31.13': {
    cniPlugins: CNI_PLUGINS,
    crictl: CRICTL,
    kubelet: 'b7733cb0e36031ab8f69cf3f73cc364730141b107d24ecb75bee5b3122dc6b6e',
    kubeadm: 'e0c91c606e1402e943666f6fda8452140851a1b2bb4f69918dd7176e8d86845c',
    kubectl: 'ce427a4df97b044bf6beaf38be6b3aaafb1b5c782c406958b3c71ebb25a48fe3',
    images: {
      apiserver: 'sha256:9abeb8a2d3e53e356d1f2e5d5dc2081cf28f23242651b0552c9e38f4a7ae960e',
      controllerManager: 'sha256:facc91288697a288a691520949fe4eec40059ef065c89da8e10481d14e131b09',
      scheduler: 'sha256:c5ce150dcce2419fdef9f9875fef43014355ccebf937846ed3a2971953f9b241',
      etcd: ETCD,
    },
  },
  'v1.32.9': {
    cniPlugins: CNI_PLUGINS,
    crictl: CRICTL,
    kubelet: 'fd7711d1f0c1e263e9332004858fc4a6c39462e3e2ee485706eea5297966ed9c',
    kubeadm: '183b3b12e39b3ed2dc2db25cbc17769610cdd5f02e9d1325ba747d54978d8f5f',
    kubectl: '509ae171bac7ad3b98cc49f5594d6bc84900cf6860f155968d1059fde3be5286',
    images: {
      apiserver: 'sha256:6df11cc2ad9679b1117be34d3a0230add88bc0a08fd7a3ebc26b680575e8de97',
      controllerManager: 'sha256:243c4b8e3bce271fcb1b78008ab996ab6976b1a20096deac08338fcd17979922',
      scheduler: 'sha256:50c49520dbd0e8b4076b6a5c77d8014df09ea3d59a73e8bafd2678d51ebb92d5',
      etcd: ETCD,
    },
  },
}

export const DEFAULT_KUBERNETES_VERSION = 'v1.31.13'
