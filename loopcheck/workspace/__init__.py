"""What the front ends read around a file: the configuration (:mod:`.config`), the files to check
(:mod:`.discovery`, and :mod:`.listing` that keeps a directory search in the cache), reading and
writing them (:mod:`.files`), the cache of results (:mod:`.cache`), ``# noqa`` comments
(:mod:`.noqa`) and notebooks (:mod:`.notebook`)."""
