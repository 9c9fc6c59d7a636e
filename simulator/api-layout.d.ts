/** Types of ./api-layout.js (plain JS, shared with the kubeadm contract fake), where they are documented. */
export interface ObjectLocation {
  resource: string
  /** Undefined in the core group. */
  group?: string | undefined
  /** Undefined for a cluster-scoped object. */
  namespace?: string | undefined
  name: string
}
export function resourceDir(dir: string, at: Omit<ObjectLocation, 'name'>): string
export function objectFile(dir: string, at: ObjectLocation): string
export function objectAt(relativeFile: string): ObjectLocation | undefined
