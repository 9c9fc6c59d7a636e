/**
 * The Kubernetes SIMULATOR of `constellation mini`: the project's CONTRACT FAKES (test doubles) of
 * the Kubernetes API (FakeApiServer, here) and of kubeadm, systemctl and the kubelet unit (the
 * package's simulator/ folder), and the state disk's simulated mapping. Tests use them in place of
 * the real parts; `mini` runs them because no Kubernetes can run on these machines, and says so on
 * every output. In src/ only the mini flow, the wiring and this simulator's process entry may
 * import it (test/architecture/simulator-users.test.ts).
 */
export { simulatorPaths, kubeletUnitFor, simulatedComponents } from './paths.js'

export { FakeApiServer } from './fake-apiserver.js'
export type { FakeApiServerOptions } from './fake-apiserver.js'
export { simulatedMounter } from './simulated-mounter.js'
