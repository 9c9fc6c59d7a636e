/** chai with chai-as-promised, imported by every test that asserts on promises. */
import * as chai from 'chai'
import chaiAsPromised from 'chai-as-promised'

chai.use(chaiAsPromised)
export const { expect } = chai
