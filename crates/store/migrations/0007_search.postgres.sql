-- Full-text search over tasks: identifier, title and description, and the
-- bodies of their comments: GIN indexes over the same expressions the search
-- query uses. Everything but letters and digits separates words (as SQLite's
-- unicode61 tokenizer does, so both engines find the same: `ACM-12` is `acm`
-- and `12`, not a negative number), and the 'simple' configuration keeps
-- words as they are, lower-cased, without stemming.
CREATE INDEX issues_search ON issues USING GIN (
    to_tsvector('simple', regexp_replace(identifier || ' ' || title || ' ' || COALESCE(description, ''), '[^[:alnum:]]+', ' ', 'g'))
);
CREATE INDEX issue_comments_search ON issue_comments USING GIN (
    to_tsvector('simple', regexp_replace(body, '[^[:alnum:]]+', ' ', 'g'))
);
