/* The param layer's types in plain C, shared by the params (src/param/param.h) and the C ABI
   (src/lua/abi.h includes this header; Lua reads the kinds as C.MF_PARAM_*). */
#ifndef MF_PARAM_TYPES_H
#define MF_PARAM_TYPES_H

/* The kind of a param's value (mf_params_kind): a boolean, integer or number (mf_params_number), an
   enum choice or dtype name (mf_params_string), or an integer list (mf_params_list_item). */
typedef enum {
  MF_PARAM_BOOL = 0, MF_PARAM_INT = 1, MF_PARAM_FLOAT = 2, MF_PARAM_ENUM = 3, MF_PARAM_DTYPE = 4, MF_PARAM_INT_LIST = 5
} mf_param_kind;

#endif /* MF_PARAM_TYPES_H */
