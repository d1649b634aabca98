import { describe, expect, it } from 'vitest';
import { wordnetCategoryMembers } from '../providers/wordnet/category-members.js';
import { categoryPhrases, categoryTerms, CATEGORY_MAX_TERMS } from './category-expansion.js';
import { MAX_QUERY_TERMS, parseQuery } from './query-terms.js';

describe('category phrases of a question', () => {
  it('takes the noun after which / what / any / some, with its modifier, and skips stop words and names', () => {
    expect(categoryPhrases('What activities does Melanie partake in?')).toEqual([['activities']]);
    expect(categoryPhrases('What European countries has Maria been to?')).toEqual([['european', 'countries']]);
    expect(categoryPhrases('What martial arts has John done?')).toEqual([['martial', 'arts']]);
    expect(categoryPhrases('What kind of art does Caroline make?')).toEqual([['art']]);
    expect(categoryPhrases('What types of pottery have Melanie and her kids made?')).toEqual([['pottery']]);
    expect(categoryPhrases('Which cities has Jon visited?')).toEqual([['cities']]);
    expect(categoryPhrases('What did Caroline research?')).toEqual([]);
    expect(categoryPhrases('What is Caroline’s identity?')).toEqual([]);
    expect(categoryPhrases('lighthouse museum opening hours')).toEqual([]);
  });
});

describe('category terms with the real WordNet lexicon', () => {
  const members = wordnetCategoryMembers();
  const terms = (q: string): Promise<string[]> => categoryTerms(q, parseQuery(q).terms, members);

  it('adds the category’s members, not the question’s own words, at most the cap', async () => {
    const countries = await terms('What European countries has Maria been to?');
    expect(countries).toEqual(expect.arrayContaining(['germany', 'italy']));
    expect(countries.length).toBeLessThanOrEqual(CATEGORY_MAX_TERMS);
    expect(await terms('What martial arts has John done?')).toEqual(expect.arrayContaining(['karate', 'judo']));
    expect(countries).not.toContain('european');
  });

  it('adds nothing without a category, and never past the query-term cap', async () => {
    expect(await terms('When did Melanie paint a sunrise?')).toEqual([]);
    const long = `What desserts ${Array.from({ length: MAX_QUERY_TERMS - 3 }, (_, i) => `word${String.fromCharCode(97 + (i % 26))}${i}x`).join(' ')}`;
    const parsed = parseQuery(long).terms;
    const added = await categoryTerms(long, parsed, members);
    expect(parsed.length + added.length).toBeLessThanOrEqual(MAX_QUERY_TERMS);
  });
});
