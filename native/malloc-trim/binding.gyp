{
  "targets": [
    {
      "target_name": "malloc_trim",
      "sources": ["src/trim.c"]
    },
    {
      "target_name": "low_memory",
      "sources": ["src/low-memory.cc"]
    }
  ]
}
