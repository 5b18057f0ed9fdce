import { parseArgs } from 'node:util'

/** The subset of parseArgs' option shapes the bench uses. */
type Options = Record<string, { type: 'string', default?: string } | { type: 'boolean', default?: boolean }>

/** What parseArgs gives for those options: a flag with a default is always there. */
type Values<O extends Options> = {
  [K in keyof O]: (O[K]['type'] extends 'boolean' ? boolean : string) | (O[K] extends { default: unknown } ? never : undefined)
}

/** A bench program's usage error: the message, then `usage`, on stderr; exit code 2. */
export function failWith (program: string, usage: string) {
  return (message: string): never => {
    console.error(`${program}: ${message}\n${usage}`)
    process.exit(2)
  }
}

/** The flags of a bench program; `--help` prints `usage` and exits 0, a bad flag is `fail`ed. */
export function readArgs<O extends Options> (usage: string, fail: (message: string) => never, options: O): Values<O> {
  let values
  try {
    values = parseArgs({ options: { ...options, help: { type: 'boolean', short: 'h', default: false } } }).values
  } catch (err) {
    return fail((err as Error).message)
  }
  if ((values as { help?: boolean }).help) {
    console.log(usage)
    process.exit(0)
  }
  return values as unknown as Values<O>
}
