-- SQLite's JSON functions as the Hub and the runner use them, for the TEXT columns that hold JSON (labels,
-- attrs, data): one spelling of the SQL for both engines, with the engine difference kept here in the
-- schema instead of in `if dialect` branches. Only the forms agen's SQL uses are defined:
--   json_each(doc) in FROM, with .key and .value (the value as text: labels map strings to strings);
--   json_extract(doc, path) with a path of SQLite's '$."key"' / '$.key' form (also a valid SQL/JSON path);
--   json_set(doc, path, value) for one top-level key, the value stored as a JSON string (NULL as null).
CREATE FUNCTION json_each(doc TEXT) RETURNS TABLE (key TEXT, value TEXT)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT e.key, e.value FROM json_each_text(doc::json) AS e $$;
CREATE FUNCTION json_extract(doc TEXT, path TEXT) RETURNS TEXT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT jsonb_path_query_first(doc::jsonb, path::jsonpath) #>> '{}' $$;
CREATE FUNCTION json_set(doc TEXT, path TEXT, val TEXT) RETURNS TEXT
    LANGUAGE sql IMMUTABLE
    AS $$ SELECT jsonb_set(COALESCE(doc, '{}')::jsonb, ARRAY[btrim(substr(path, 3), '"')],
                           COALESCE(to_jsonb(val), 'null'::jsonb))::text $$;
