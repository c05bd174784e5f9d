// drc.option_min names an option drc.options does not declare.
module attributes {drc.options = {width = 2}, drc.option_min = {widht = 1}} {
}
