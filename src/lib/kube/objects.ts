/** The shapes of the objects the tool reads and writes through a cluster client, without the library's classes. */
import type { OwnerReference } from './api.js'

export interface ObjectMeta {
  name: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  labels?: Record<string, string>
  annotations?: Record<string, string>
  ownerReferences?: OwnerReference[]
}

/** Any object: custom resources with their spec and status, Secrets and ConfigMaps with their data. */
export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta
  spec?: Record<string, unknown>
  status?: Record<string, unknown>
  /** Secrets and ConfigMaps; a Secret's values as plain text (the client encodes and decodes). */
  data?: Record<string, string>
  type?: string
}

/** One resource of an API group, at one version. */
export interface ResourceRef {
  group: string
  version: string
  plural: string
}

/** The part of a Node the tool reads. */
export interface KubeNode {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  spec?: { unschedulable?: boolean }
  status?: {
    addresses?: Array<{ type: string; address: string }>
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>
    nodeInfo?: { kubeletVersion?: string }
  }
}

/** A kubeconfig file (the operator's), or the text of one from a Secret (a workload cluster's). */
export type KubeconfigSource = { file: string } | { text: string; what: string }
