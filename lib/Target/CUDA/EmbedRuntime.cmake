# Writes OUT: one `{"name", R"ein_rt(text)ein_rt"},` per file of FILES
# (separated by commas) in DIR, for EmitCUDA.cpp's table of runtime files.
string(REPLACE "," ";" files "${FILES}")
set(text "// Generated from lib/Target/CUDA/Runtime by EmbedRuntime.cmake.\n")
foreach(f ${files})
  file(READ "${DIR}/${f}" content)
  string(FIND "${content}" ")ein_rt\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter )ein_rt\"")
  endif()
  string(APPEND text "{\"${f}\", R\"ein_rt(${content})ein_rt\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
