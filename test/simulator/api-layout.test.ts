/** simulator/api-layout.js: the API fake's storage layout, shared with the kubeadm contract fake. */
import path from 'node:path'
import { objectAt, objectFile, type ObjectLocation } from '../../simulator/api-layout.js'
import { expect } from '../support/chai.js'

const DIR = '/api'
const cases: Record<string, { at: ObjectLocation; file: string }> = {
  'a namespaced core object': {
    at: { resource: 'configmaps', group: undefined, namespace: 'kube-public', name: 'cluster-info' },
    file: 'namespaces/kube-public/configmaps/cluster-info.json',
  },
  'a namespaced object of a group': {
    at: { resource: 'leases', group: 'coordination.k8s.io', namespace: 'kube-node-lease', name: 'cp-0' },
    file: 'namespaces/kube-node-lease/leases.coordination.k8s.io/cp-0.json',
  },
  'a cluster-scoped core object': {
    at: { resource: 'nodes', group: undefined, namespace: undefined, name: 'worker-0' },
    file: 'nodes/worker-0.json',
  },
  'a Namespace': {
    at: { resource: 'namespaces', group: undefined, namespace: undefined, name: 'kube-system' },
    file: 'namespaces/kube-system.json',
  },
  'a cluster-scoped object of a group': {
    at: {
      resource: 'customresourcedefinitions',
      group: 'apiextensions.k8s.io',
      namespace: undefined,
      name: 'certificates.cert-manager.io',
    },
    file: 'customresourcedefinitions.apiextensions.k8s.io/certificates.cert-manager.io.json',
  },
}

describe('simulator/api-layout.js (where the API fake keeps an object)', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(`${name}: its file, and the object read back from the file`, () => {
      expect(objectFile(DIR, tc.at)).to.equal(path.join(DIR, tc.file))
      expect(objectAt(tc.file)).to.deep.equal(tc.at)
    })
  }

  for (const file of ['nodes/README', 'namespaces/ns/configmaps.json', 'nodes/a/b.json', 'x.json'])
    it(`holds no object: ${file}`, () => expect(objectAt(file)).to.equal(undefined))
})
