/**
 * The storage layout of the Kubernetes API contract fake, spelled once: where an object lives as a
 * file in the directory that stands in for the API. The API fake's DirStore (src/lib/simulator), the
 * kubeadm contract fake (which reads and writes that directory, as kubeadm reads and writes the API)
 * and the tests' FakeKubeApiDir all use this module. It is plain JS beside the fakes because the
 * kubeadm fake runs as a program of its own from the package's simulator/ folder, where no
 * TypeScript is shipped; api-layout.d.ts gives the TypeScript side its types.
 *
 *   namespaces/<namespace>/<folder>/<name>.json   a namespaced object
 *   <folder>/<name>.json                          a cluster-scoped one (a Node, a Namespace, a CRD)
 *
 * <folder> is the resource (`configmaps`) in the core group, `<resource>.<group>` in any other
 * (`leases.coordination.k8s.io`): resources have no dots, groups may.
 */
import path from 'node:path'

/** The folder of a resource's objects in `dir`, in `namespace` or cluster-scoped. */
export function resourceDir(dir, { resource, group, namespace }) {
  const folder = group ? `${resource}.${group}` : resource
  return namespace ? path.join(dir, 'namespaces', namespace, folder) : path.join(dir, folder)
}

/** The file of one object in `dir`. */
export function objectFile(dir, { name, ...at }) {
  return path.join(resourceDir(dir, at), `${name}.json`)
}

/** Which object a file (relative to the directory) holds, or undefined when it holds none. */
export function objectAt(relativeFile) {
  const parts = relativeFile.split(path.sep)
  const namespaced = parts[0] === 'namespaces' && parts.length === 4
  if (!namespaced && parts.length !== 2) return undefined
  const [folder, file] = namespaced ? parts.slice(2) : parts
  if (!file.endsWith('.json')) return undefined
  const dot = folder.indexOf('.')
  return {
    resource: dot < 0 ? folder : folder.slice(0, dot),
    group: dot < 0 ? undefined : folder.slice(dot + 1),
    namespace: namespaced ? parts[1] : undefined,
    name: file.slice(0, -'.json'.length),
  }
}
