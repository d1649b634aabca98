import { posix } from 'node:path';

/** One module specifier of a source file. */
export interface ImportSite {
  specifier: string;
  /** 1-based line of the statement or call. */
  line: number;
  endLine: number;
  /** Named bindings imported (`import { a, b as c }` gives a, b); empty for default, namespace or side-effect imports. */
  names: string[];
}

export interface ExportSite {
  name: string;
  line: number;
  endLine: number;
}

export interface ModuleFacts {
  imports: ImportSite[];
  exports: ExportSite[];
}

/** Source files whose imports are read: TypeScript and JavaScript modules. */
export const CODE_FILE_RE = /\.(?:ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

type Ts = typeof import('typescript');
let loaded: Promise<Ts> | undefined;

/**
 * The TypeScript compiler, loaded on first use (about 0.3 s; only graph builds over a repository pay it). Its
 * parser reads TypeScript and JavaScript alike, type-only imports and `import()` types included, which a
 * JavaScript-only lexer such as es-module-lexer does not (docs/knowledge.md).
 */
function typescript(): Promise<Ts> {
  return (loaded ??= import('typescript').then((m) => ((m as { default?: Ts }).default ?? m) as Ts));
}

/**
 * The imports (static, type-only, re-exports, dynamic `import()`, `import('x')` types and `require('x')`) and the
 * exported names of one module, parsed with the TypeScript compiler's parser (no type checking).
 */
export async function readModuleFacts(path: string, text: string): Promise<ModuleFacts> {
  const ts = await typescript();
  const kind = /\.(?:tsx|jsx)$/.test(path) ? ts.ScriptKind.TSX : /\.(?:js|mjs|cjs)$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const lineOf = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const imports: ImportSite[] = [];
  const exports: ExportSite[] = [];
  const site = (node: import('typescript').Node, spec: import('typescript').Expression | undefined, names: string[]) => {
    if (spec && ts.isStringLiteralLike(spec)) imports.push({ specifier: spec.text, line: lineOf(node.getStart(sf)), endLine: lineOf(node.getEnd()), names });
  };
  const exported = (node: import('typescript').Node, name: string) => exports.push({ name, line: lineOf(node.getStart(sf)), endLine: lineOf(node.getEnd()) });
  const isExported = (node: import('typescript').Node) =>
    ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

  const visit = (node: import('typescript').Node): void => {
    if (ts.isImportDeclaration(node)) {
      const bindings = node.importClause?.namedBindings;
      const names = bindings && ts.isNamedImports(bindings) ? bindings.elements.map((e) => (e.propertyName ?? e.name).text) : [];
      site(node, node.moduleSpecifier, names);
    } else if (ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier) {
        const clause = node.exportClause;
        site(node, node.moduleSpecifier, clause && ts.isNamedExports(clause) ? clause.elements.map((e) => (e.propertyName ?? e.name).text) : []);
      }
      if (node.exportClause && ts.isNamedExports(node.exportClause)) for (const e of node.exportClause.elements) exported(node, e.name.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      site(node, node.moduleReference.expression, []);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const isImportCall = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === 'require' && node.arguments.length === 1;
      if (isImportCall || isRequire) site(node, node.arguments[0], []);
    } else if (ts.isImportTypeNode(node)) {
      const arg = node.argument;
      if (ts.isLiteralTypeNode(arg)) site(node, arg.literal as import('typescript').Expression, node.qualifier && ts.isIdentifier(node.qualifier) ? [node.qualifier.text] : []);
    } else if (ts.isExportAssignment(node)) {
      exported(node, 'default');
    }
    if (isExported(node)) {
      if (
        ts.isFunctionDeclaration(node) ||
        ts.isClassDeclaration(node) ||
        ts.isInterfaceDeclaration(node) ||
        ts.isTypeAliasDeclaration(node) ||
        ts.isEnumDeclaration(node)
      ) {
        const isDefault = (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
        exported(node, isDefault ? 'default' : (node.name?.text ?? 'default'));
      } else if (ts.isVariableStatement(node)) {
        for (const d of node.declarationList.declarations) if (ts.isIdentifier(d.name)) exported(node, d.name.text);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return { imports, exports };
}

/** Extensions tried for a specifier written with a JavaScript extension or none, TypeScript's NodeNext way. */
const CANDIDATES: Record<string, string[]> = {
  '.js': ['.ts', '.tsx', '.js', '.jsx', '.d.ts'],
  '.jsx': ['.tsx', '.jsx'],
  '.mjs': ['.mts', '.mjs', '.d.mts'],
  '.cjs': ['.cts', '.cjs', '.d.cts'],
  '': ['.ts', '.tsx', '.d.ts', '.js', '.jsx', '/index.ts', '/index.tsx', '/index.js'],
};

/**
 * The repository file a relative specifier names, among `files` (paths relative to the repository root), or null
 * for a package or a file that is not in the tree. `./x.js` finds `x.ts` as TypeScript does; a specifier that
 * already names an existing file is that file.
 */
export function resolveRelative(importer: string, specifier: string, files: ReadonlySet<string>): string | null {
  if (!specifier.startsWith('./') && !specifier.startsWith('../') && specifier !== '.' && specifier !== '..') return null;
  const base = posix.normalize(posix.join(posix.dirname(importer), specifier));
  if (base.startsWith('../')) return null;
  const ext = posix.extname(base);
  const known = ext in CANDIDATES ? ext : '';
  const stem = known === '' ? base : base.slice(0, -ext.length);
  if (known !== '' ) {
    for (const e of CANDIDATES[known]!) if (files.has(stem + e)) return stem + e;
    return files.has(base) ? base : null;
  }
  if (files.has(base) && CODE_FILE_RE.test(base)) return base;
  for (const e of CANDIDATES['']!) if (files.has(stem + e)) return stem + e;
  return files.has(base) ? base : null;
}
