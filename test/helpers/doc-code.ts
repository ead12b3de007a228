/** TypeScript from the docs, type-checked and run as a reader would: against the project's packages. */
import path from 'node:path';
import ts from 'typescript';

/** The compiler's complaints about `source`, a module of the test folder (its imports resolve from the project). */
export function typeProblems(source: string): string[] {
  // A file of the test folder that is never written.
  const file = path.join(__dirname, '..', 'doc-code.generated.ts');
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    strict: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  const parsed = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022);
  const { getSourceFile, fileExists } = host;
  host.getSourceFile = (name, ...rest) => (name === file ? parsed : getSourceFile(name, ...rest));
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

/** `source` compiled and run as a CommonJS module: its exports. */
export function loadModule<Exports>(source: string): Partial<Exports> {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      esModuleInterop: true,
    },
  });
  const exports: Partial<Exports> = {};
  new Function('require', 'exports', outputText)(require, exports);
  return exports;
}

/** A module of `code`'s imports and one exported async function `name(params)` of the rest. */
export function asFunctionModule(code: string, name: string, params = ''): string {
  const lines = code.split('\n');
  return [
    ...lines.filter((line) => line.startsWith('import ')),
    `export async function ${name}(${params}): Promise<void> {`,
    ...lines.filter((line) => !line.startsWith('import ')),
    '}',
  ].join('\n');
}
