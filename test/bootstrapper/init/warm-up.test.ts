/** The idle daemon's warm-up runs the first Init's code with throwaway input and leaves no trace. */
import { readdir } from 'node:fs/promises'
import { prepareInitPath } from '../../../src/lib/bootstrapper/init/warm-up.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { expect } from '../../support/chai.js'
import { withTempDir } from '../../support/temp.js'

describe('init warm-up', () => {
  it('runs through with the node paths and writes nothing under the node root', async () => {
    await withTempDir(async (root) => {
      await prepareInitPath(nodePaths(root))
      expect(await readdir(root)).to.deep.equal([])
    })
  })
})
