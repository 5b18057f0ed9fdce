import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  ignores: ['dist/', 'build/', 'data/', 'coverage/', '.tap/', 'db/migrations/', 'client/schema.ts']
})
