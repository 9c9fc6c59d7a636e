/**
 * The provider's shared shapes: which CAPI resources it reads, what a reconcile needs and returns,
 * and the init lock it is given (as Cluster API gives its reconciler a KubeadmInitLock).
 */
import type { RandomBytes } from '../../kube/index.js'
import type { Assignment } from '../orchestrate.js'
import type { BootstrapTemplates } from '../templates.js'
import type { CertificateAuthorities } from '../types.js'
import type { CapiApi } from './capi-api.js'
import type { CapiCluster, CapiMachine, CapiResource, KubeadmConfigObject } from './capi-objects.js'

export interface CapiResources {
  version: 'v1beta1' | 'v1beta2'
  clusters: CapiResource<CapiCluster>
  machines: CapiResource<CapiMachine>
  kubeadmConfigs: CapiResource<KubeadmConfigObject>
}

/** Cluster API's InitLocker: the one Machine of a Cluster that gets init data. */
export interface InitLock {
  /** Held by `machine` now (taken, or already its own); otherwise why not. */
  acquire(
    cluster: CapiCluster,
    machine: string,
  ): Promise<{ acquired: true } | { acquired: false; reason: string }>
  /** Freed once the control plane is initialized; releasing a free lock is no error. */
  release(namespace: string, cluster: string): Promise<void>
}

export interface ReconcileDeps {
  api: CapiApi
  resources: CapiResources
  /** Who may get init data: one Machine per Cluster (production: initLockConfigMap, capi.md §6). */
  initLock: InitLock
  /** The workload cluster of a Cluster, from its `<cluster>-kubeconfig` Secret (CAPI core writes it). */
  workload: (
    kubeconfigText: string,
    cluster: string,
  ) => Promise<Pick<CapiApi, 'getSecret' | 'createSecret' | 'replaceSecretData'>>
  /** The cluster's CA set, from its CAPI Secrets; `generate` creates missing ones (init only). */
  authorities: (cluster: CapiCluster, generate: boolean) => Promise<CertificateAuthorities>
  templates: BootstrapTemplates
  randomBytes: RandomBytes
  clock: () => Date
  tokenTtlMs: number
}

export type Outcome =
  | { result: 'skipped'; reason: string }
  | { result: 'waiting'; reason: string }
  | { result: 'ready'; role?: Assignment['role']; secret: string }
  | { result: 'refreshed' | 'unchanged'; detail: string }
  | { result: 'failed'; reason: string }
