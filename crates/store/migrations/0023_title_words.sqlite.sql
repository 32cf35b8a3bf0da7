-- Nothing to change on SQLite: the search index keeps a task's identifier,
-- title, description and comments in columns of their own, and a query
-- limited to some of them (`{identifier title} : ...`) ranks title matches.
SELECT 1;
