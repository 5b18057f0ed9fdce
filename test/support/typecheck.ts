import { mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Test } from 'tap'
import ts from 'typescript'

const root = fileURLToPath(new URL('../../', import.meta.url))

/**
 * Type-checks `files` (name to TypeScript source) as modules of a user's project, with this
 * repository's compiler options: `plinth` and `plinth/client` resolve to the sources, any other
 * package to this repository's node_modules. Resolves the errors in those files, one line each.
 */
export async function typecheck (t: Test, files: Record<string, string>): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'plinth-typecheck-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await symlink(await realpath(join(root, 'node_modules')), join(dir, 'node_modules'))
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  for (const [name, source] of Object.entries(files)) await writeFile(join(dir, name), source)

  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile).config as object
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, root)
  const program = ts.createProgram(Object.keys(files).map((name) => join(dir, name)), {
    ...options,
    noEmit: true,
    paths: { plinth: [join(root, 'index.ts')], 'plinth/client': [join(root, 'client/schema.ts')], 'plinth/*': [join(root, '*', 'index.ts')] }
  })
  return ts.getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file?.fileName.startsWith(dir))
    .map((diagnostic) => {
      const { line, character } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
      const name = diagnostic.file!.fileName.slice(dir.length + 1)
      return `${name}:${line + 1}:${character + 1}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`
    })
}
