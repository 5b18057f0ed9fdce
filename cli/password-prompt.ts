import { Interrupted, UsageError } from './command.js'

function readHidden (prompt: string): Promise<string> {
  const { stdin, stderr } = process
  // Echo goes off before the prompt shows, so nothing typed after it can appear.
  stdin.setRawMode(true)
  stderr.write(prompt)
  stdin.setEncoding('utf8')
  return new Promise((resolve, reject) => {
    let text = ''
    const finish = (error?: Error) => {
      stdin.off('data', onData).setRawMode(false).pause()
      stderr.write('\n')
      if (error) reject(error)
      else resolve(text)
    }
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish()
        if (char === '\u0003') return finish(new Interrupted())
        text = char === '\u007f' || char === '\b' ? [...text].slice(0, -1).join('') : text + char
      }
    }
    stdin.on('data', onData).resume()
  })
}

/** Never from argv: the process list and the shell history would show it. */
export async function readPassword (): Promise<string> {
  if (process.stdin.isTTY) {
    const password = await readHidden('Password: ')
    if (await readHidden('Password (again): ') !== password) throw new UsageError('the two passwords differ')
    return password
  }
  let text = ''
  for await (const chunk of process.stdin.setEncoding('utf8')) text += chunk
  const password = text.replace(/\r?\n$/, '')
  if (password === '') throw new UsageError('no password on stdin')
  if (/[\r\n]/.test(password)) throw new UsageError('stdin must hold the password alone, on one line')
  return password
}
