/**
 * TenFlang as a CodeMirror 6 language: a line tokenizer mirroring the Pygments lexer
 * (tenflang_nb/lexer.py), plus the `%%tenflang` magic line that opens a notebook cell.
 *
 * Every token gets a TenFlang tag whose parent is a standard tag (what a theme knows it as),
 * and `tenflangClasses` adds a stable `cm-tenflang-<category>` class, which the palette's
 * stylesheet (`STYLE`, from tenflang_nb/palette.py: the notebook's listings use the same
 * colours) colours: `installStyle` puts it in the page once.
 */
import { LanguageSupport, StreamLanguage, syntaxHighlighting } from '@codemirror/language';
import type { StringStream } from '@codemirror/language';
import { Tag, tagHighlighter, tags as t } from '@lezer/highlight';

import { PATTERNS, STYLE, WORDS } from './words';

/** The word lists written by `python -m tenflang_nb.editor_words` (see src/words.ts). */
export interface IWords {
  /** `declare`, `define`, `declare_vector`, `define_vector`. */
  instructions: string[];
  /** The macro directive, `#macro` (one word). */
  macro: string[];
  /** Variable kinds: `input`, `weight`, `loss`, ... */
  kinds: string[];
  /** Every operator keyword, aliases included. */
  operators: string[];
  /** The other reserved words: `dot`, `reduce_vector`, `inf`, `null`, ... */
  reserved: string[];
  /** The cell magics' options that take no value (`--full`, `--no-live`). */
  flags: string[];
}

/** Regular expressions (as source text) from tenflang_nb/core/lexical.py, as the parser and
 * the Pygments lexer use them. */
export interface IPatterns {
  /** A name: `w`, `hidden_1`, `x.0`. */
  name: string;
  /** A generated derivative name: `d/L/d/w`, `d/o/d/z:0`. */
  derivative: string;
  /** A numeric literal: `2`, `-1.5`, `.5`, `3e-2`. */
  number: string;
  /** A lookahead: a word ends where a name could not go on (`.`, `/`, `:` included). */
  end: string;
  /** The magic that makes a cell TenFlang: `%%tenflang` or a sibling `%%tenflang_<x>`. */
  magic: string;
}

/** A cell is TenFlang when its first line calls `%%tenflang` or a sibling `%%tenflang_<x>`. */
export const MAGIC_LINE = new RegExp(`^${PATTERNS.magic}`);

const STYLE_ID = 'tenflang-nb-palette';

/** Put the palette's stylesheet into `doc` (once: a second call changes nothing). */
export function installStyle(doc: Document): void {
  if (doc.getElementById(STYLE_ID)) {
    return;
  }
  const style = doc.createElement('style');
  style.id = STYLE_ID;
  style.textContent = STYLE;
  doc.head.appendChild(style);
}

// Parents are tags JupyterLab's highlight style colours (see its jupyterHighlightStyle). A
// modified tag cannot be a parent: those categories modify a TenFlang sub-tag instead, which
// a style for the modified parent (t.standard(t.variableName)) still matches.
const TAGS = {
  magic: Tag.define(t.meta),
  model: t.definition(Tag.define(t.variableName)),
  option: Tag.define(t.attributeName),
  value: Tag.define(t.string),
  instruction: Tag.define(t.keyword),
  macro: Tag.define(t.meta),
  kind: Tag.define(t.atom),
  operator: t.standard(Tag.define(t.variableName)),
  reserved: Tag.define(t.keyword),
  derivative: t.special(Tag.define(t.variableName)),
  name: Tag.define(t.variableName),
  number: Tag.define(t.number),
  equals: Tag.define(t.definitionOperator),
  punctuation: Tag.define(t.punctuation),
  comment: Tag.define(t.lineComment),
  invalid: Tag.define(t.invalid)
};
export type Category = keyof typeof TAGS;

/** Adds `cm-tenflang-<category>` to every TenFlang token, next to the theme's classes. */
export const tenflangClasses = tagHighlighter(
  (Object.keys(TAGS) as Category[]).map(category => ({
    tag: TAGS[category],
    class: `cm-tenflang-${category}`
  }))
);

const INSTRUCTIONS = new Set(WORDS.instructions);
const KINDS = new Set(WORDS.kinds);
const OPERATORS = new Set(WORDS.operators);
const RESERVED = new Set(WORDS.reserved);
const FLAGS = new Set(WORDS.flags);

function escape(word: string): string {
  return word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Each token is matched whole: up to where a word ends, as in lexer.py.
const END = PATTERNS.end;
const DERIVATIVE = new RegExp(`^${PATTERNS.derivative}${END}`);
const WORD = new RegExp(`^${PATTERNS.name}${END}`);
const MACRO = new RegExp(`^(?:${WORDS.macro.map(escape).join('|')})${END}`);
const NUMBER = new RegExp(`^${PATTERNS.number}${END}`);
// Heads of statements whose `= WORD operand...` applies an operator (or a macro).
const APPLYING = new Set(['define', 'define_vector', ...WORDS.macro]);

interface IState {
  /** 1-based number of the line being read: line 1 may be the magic line. */
  line: number;
  /** This line is the `%%tenflang` line. */
  magic: boolean;
  /** Magic line: the previous word was an option that takes a value. */
  wantValue: boolean;
  /** First word of the current statement (a line, or a part of a `#macro` line). */
  head: string;
  /** The previous token was `=`. */
  afterEquals: boolean;
  /** The macros the `#macro` lines above defined: applied like operators. */
  macros: string[];
}

function newLine(state: IState): void {
  state.line += 1;
  state.wantValue = false;
  state.head = '';
  state.afterEquals = false;
}

function magicToken(stream: StringStream, state: IState): Category {
  if (stream.sol()) {
    stream.match(/^\S+/);
    return 'magic';
  }
  const option = stream.match(/^--?[A-Za-z0-9_-]+/) as RegExpMatchArray | null;
  if (option) {
    state.wantValue = !FLAGS.has(option[0]);
    return 'option';
  }
  if (stream.eat('=')) {
    return 'equals'; // --lr=0.5: the value follows
  }
  // a quoted value is one word: --example "{x: 1.5, y: 0.2}"
  if (!stream.match(/^"[^"]*"?/) && !stream.match(/^'[^']*'?/)) {
    stream.match(/^\S+/);
  }
  const category = state.wantValue ? 'value' : 'model';
  state.wantValue = false;
  return category;
}

function wordCategory(
  word: string,
  stream: StringStream,
  state: IState,
  afterEquals: boolean
): Category {
  if (INSTRUCTIONS.has(word)) {
    return 'instruction';
  }
  if (KINDS.has(word)) {
    return 'kind';
  }
  if (OPERATORS.has(word)) {
    return 'operator';
  }
  if (RESERVED.has(word)) {
    return 'reserved';
  }
  // Where an operator goes (`define n = OP operand`) only an operator, or a macro, is one:
  // anything else there is misspelled (`logstic`), and shows so before the cell runs.
  if (afterEquals && APPLYING.has(state.head) && stream.match(/^[ \t]+[^\s#;]/, false)) {
    if (state.head === WORDS.macro[0] && !state.macros.includes(word)) {
      state.macros.push(word); // `#macro c = NAME a; ...` defines NAME
    }
    return state.macros.includes(word) ? 'operator' : 'invalid';
  }
  return 'name';
}

function programToken(stream: StringStream, state: IState): Category {
  const macro = stream.match(MACRO) as RegExpMatchArray | null;
  if (macro) {
    state.head = macro[0];
    return 'macro';
  }
  if (stream.peek() === '#') {
    stream.skipToEnd();
    return 'comment';
  }
  const afterEquals = state.afterEquals;
  state.afterEquals = false;
  if (stream.eat(';')) {
    state.head = ''; // a #macro line holds several statements
    return 'punctuation';
  }
  if (stream.eat(/[[\],]/)) {
    return 'punctuation';
  }
  if (stream.eat('=')) {
    state.afterEquals = true;
    return 'equals';
  }
  if (stream.match(DERIVATIVE)) {
    return 'derivative';
  }
  if (stream.match(NUMBER)) {
    return 'number';
  }
  const word = stream.match(WORD) as RegExpMatchArray | null;
  if (word) {
    const category = wordCategory(word[0], stream, state, afterEquals);
    if (!state.head) {
      state.head = word[0];
    }
    return category;
  }
  // The checker reports anything else; show it as one token up to the next separator.
  if (!stream.match(/^[^\s[\],;=#]+/)) {
    stream.next();
  }
  return 'invalid';
}

/** The TenFlang stream language (its parse is line by line, like the language). */
export const tenflangLanguage = StreamLanguage.define<IState>({
  name: 'tenflang',
  startState: () => ({
    line: 0,
    magic: false,
    wantValue: false,
    head: '',
    afterEquals: false,
    macros: []
  }),
  blankLine: state => newLine(state),
  token(stream, state) {
    if (stream.sol()) {
      newLine(state);
      state.magic = state.line === 1 && Boolean(stream.match(/^%%/, false));
    }
    if (stream.eatSpace()) {
      return null;
    }
    return state.magic ? magicToken(stream, state) : programToken(stream, state);
  },
  languageData: { commentTokens: { line: '#' } },
  tokenTable: TAGS
});

/** TenFlang with its highlighting classes, as one extension for an editor. */
export const tenflang = new LanguageSupport(tenflangLanguage, [
  syntaxHighlighting(tenflangClasses)
]);
