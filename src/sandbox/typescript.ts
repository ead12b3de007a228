/**
 * TypeScript tools are transpiled (types stripped, nothing type-checked, as Node 20 cannot strip them
 * itself) to an ES module that exports the function the runner calls.
 */
import ts from 'typescript';
import { ToolError } from '../returns/tool-error';

/** The source does not parse, or does not define the function to call. */
export class TypeScriptSourceError extends ToolError {
  override name = 'TypeScriptSourceError';
}

export interface TranspiledTool {
  /** The function called: the one named, or the one a source without a name is run by. */
  name: string;
  /** An ES module exporting the function under its own name. */
  js: string;
  /** The function's parameter names, in order; absent when one is a pattern or a rest parameter. */
  paramOrder?: string[];
}

const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.ES2022,
  target: ts.ScriptTarget.ES2022,
};

/** The most diagnostics quoted in an error. */
const MAX_DIAGNOSTICS = 3;

type FunctionLike = ts.FunctionDeclaration | ts.ArrowFunction | ts.FunctionExpression;

interface TopLevelFunction {
  name: string;
  node: FunctionLike;
  /** Reachable by name in the module's namespace (a default export is not). */
  exported: boolean;
}

function describe(diagnostic: ts.Diagnostic): string {
  const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
  if (!diagnostic.file || diagnostic.start === undefined) return text;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  return `(${line + 1},${character + 1}): ${text}`;
}

const hasExportModifier = (node: ts.Declaration) => {
  const flags = ts.getCombinedModifierFlags(node);
  return (flags & ts.ModifierFlags.Export) !== 0 && (flags & ts.ModifierFlags.Default) === 0;
};

/** The names `export { a, b as c }` clauses give. */
const clauseExports = (file: ts.SourceFile) =>
  new Set(
    file.statements.flatMap((s) =>
      ts.isExportDeclaration(s) && !s.moduleSpecifier && s.exportClause && ts.isNamedExports(s.exportClause)
        ? s.exportClause.elements.map((element) => element.name.text)
        : [],
    ),
  );

/** Function declarations with a body, and `const f = (…) => …` / `function (…) {…}`, at the top level. */
function topLevelFunctions(source: string): TopLevelFunction[] {
  const file = ts.createSourceFile('tool.ts', source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const exports = clauseExports(file);
  const found = (name: string, node: FunctionLike, declaration: ts.Declaration) => ({
    name,
    node,
    exported: hasExportModifier(declaration) || exports.has(name),
  });
  return file.statements.flatMap((statement): TopLevelFunction[] => {
    if (ts.isFunctionDeclaration(statement) && statement.name && statement.body)
      return [found(statement.name.text, statement, statement)];
    if (!ts.isVariableStatement(statement)) return [];
    return statement.declarationList.declarations.flatMap((declaration) => {
      const value = declaration.initializer;
      if (!ts.isIdentifier(declaration.name) || !value) return [];
      if (!ts.isArrowFunction(value) && !ts.isFunctionExpression(value)) return [];
      return [found(declaration.name.text, value, declaration)];
    });
  });
}

function parameterNames(node: FunctionLike): string[] | undefined {
  const parameters = node.parameters.filter((p) => !(ts.isIdentifier(p.name) && p.name.text === 'this'));
  if (parameters.some((p) => !ts.isIdentifier(p.name) || p.dotDotDotToken)) return undefined;
  return parameters.map((p) => (p.name as ts.Identifier).text);
}

/** The function to call: the one named; without a name, the exported one (as Letta finds it), else the last. */
function chosenFunction(functions: TopLevelFunction[], name: string | undefined): TopLevelFunction {
  if (name === undefined) {
    const chosen = functions.find((f) => f.exported) ?? functions.at(-1);
    if (!chosen)
      throw new TypeScriptSourceError('No function found at the top level of the TypeScript source');
    return chosen;
  }
  const named = functions.find((f) => f.name === name);
  if (!named) throw new TypeScriptSourceError(`No function named ${name} at the top level of the source`);
  return named;
}

/** The tool as the runner takes it; throws TypeScriptSourceError when it cannot run at all. */
export function transpileTool(source: string, name?: string): TranspiledTool {
  const { outputText, diagnostics = [] } = ts.transpileModule(source, {
    compilerOptions: COMPILER_OPTIONS,
    fileName: 'tool.ts',
    reportDiagnostics: true,
  });
  if (diagnostics.length > 0) {
    const details = diagnostics.slice(0, MAX_DIAGNOSTICS).map(describe).join('; ');
    throw new TypeScriptSourceError(`The TypeScript source does not compile: ${details}`);
  }
  const tool = chosenFunction(topLevelFunctions(source), name);
  // The runner calls the function from the module's exports, and Letta's tools need not export it.
  const js = tool.exported ? outputText : `${outputText}\nexport { ${tool.name} };\n`;
  return { name: tool.name, js, paramOrder: parameterNames(tool.node) };
}
