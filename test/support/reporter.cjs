// mocha's spec reporter plus one plain closing line ("mocha: N passed, N failed") that CI tooling
// outside mocha's own ecosystem can read.
const Mocha = require('mocha')

const { Spec } = Mocha.reporters
const { EVENT_RUN_END } = Mocha.Runner.constants

class SpecWithSummary extends Spec {
  constructor(runner, options) {
    super(runner, options)
    runner.once(EVENT_RUN_END, () => {
      const { passes, failures, pending } = runner.stats
      process.stdout.write(
        `\nmocha: ${passes} passed, ${failures} failed${pending ? `, ${pending} skipped` : ''}\n`,
      )
    })
  }
}

module.exports = SpecWithSummary
