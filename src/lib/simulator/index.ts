/**
 * The Kubernetes SIMULATOR of `constellation mini`: the project's CONTRACT FAKES (test doubles) of
 * the Kubernetes API (FakeApiServer, here) and of kubeadm, systemctl and the kubelet unit (the
 * package's simulator/ folder), and the state disk's simulated mapping. Tests use them in place of
 * the real parts; `mini` runs them because no Kubernetes can run on these machines, and says so on
 * every output. In src/ only the mini flow, the wiring and this simulator's process entry may
 * import it (test/architecture/simulator-users.test.ts).
 */
export { simulatorPaths, kubeletUnitFor } from './paths.js'
export type { SimulatorPaths } from './paths.js'
export { ADMIN_TOKEN, FakeApiServer, startFakeApiServer } from './fake-apiserver.js'
export type {
  FailRule,
  FakeApiServerOptions,
  KubeObject,
  RecordedRequest,
  WorkloadRef,
} from './fake-apiserver.js'
export { simulatedMounter } from './simulated-mounter.js'
export { startSilentApiServer } from './fake-apiserver-silent.js'
export type { SilentApiServer } from './fake-apiserver-silent.js'
